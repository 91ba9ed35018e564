import {
  asProblem,
  type Organization,
  type OrganizationConnection,
  type OrganizationDomain,
  organizations,
} from '../api.js';
import { field, h, uid } from '../dom.js';
import { actionButton, alertBox, FieldRefusal, makeForm } from '../forms.js';

import { t } from '../messages/sso.js';
import { inOwnWords } from './organizations.js';
import { card, confirmButton, saySuccess } from './security/common.js';

/*
 * The "SSO" section of #/organizations/<id> (docs/sso.md), for those who hold connections:manage
 * (owners and admins): the organization's connections (enable, disable, test, delete; our metadata
 * URL and ACS URL, or an OpenID connection's redirect URI, to copy), a form to add one (SAML: the
 * IdP's metadata pasted or chosen as a file, or its entity id, sign-on URL and certificate; OpenID:
 * issuer, client id and secret, claims), and, with domains:manage, the domains it speaks for
 * (claim, the TXT record to publish, verify, remove), and the switch that requires SSO for those
 * domains (docs/sso.md, "Require SSO"), turned on only after a confirmation that says who is signed out.
 */

const CONNECTION_WORDS = () => ({
  'organization.connection_invalid': t('org.invalid'),
  'organization.connection_metadata_unavailable': t('org.metadataUnavailable'),
});
const REQUIREMENT_WORDS = () => ({
  'organization.sso_requirement_unmet': t('org.requireUnmet'),
});
const DOMAIN_WORDS = () => ({
  'organization.domain_unverified': t('org.notFound'),
  'organization.domain_taken': t('org.domainTaken'),
  'organization.domain_check_unavailable': t('org.dnsUnavailable'),
  'organization.domain_invalid': t('org.domainInvalid'),
});

/** A read-only value with its Copy button; `label` names it. */
export function copyRow(label: string, value: string, name: string): HTMLElement {
  const id = uid(name);
  const input = h('input', { id, type: 'text', name, readonly: true, value });
  input.value = value;
  const status = h('p', { class: 'hint', role: 'status' });
  const copy = h(
    'button',
    { type: 'button', class: 'secondary', 'aria-label': t('org.copyLabel', { what: label }) },
    t('org.copy'),
  );
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value);
      status.textContent = t('org.copied');
    } catch {
      input.select();
      status.textContent = t('org.copyRefused');
    }
  });
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    h('div', { class: 'copy-row' }, input, copy),
    status,
  );
}

function textArea(
  label: string,
  name: string,
  hint?: string,
): { wrap: HTMLElement; area: HTMLTextAreaElement } {
  const id = uid(name);
  const area = h('textarea', {
    id,
    name,
    rows: 5,
    spellcheck: 'false',
    'aria-describedby': hint ? `${id}-hint` : undefined,
  });
  return {
    wrap: h(
      'div',
      { class: 'field' },
      h('label', { for: id }, label),
      hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null,
      area,
    ),
    area,
  };
}

export async function ssoCard(org: Organization): Promise<HTMLElement> {
  const { el } = card('org-sso', t('org.title'));
  const body = h('div');
  el.append(h('p', { class: 'hint' }, t('org.intro')), body);
  const canDomains = org.permissions.includes('domains:manage');
  // The organization as the page read it; the switch keeps it current.
  const state = { requireSso: org.requireSso };
  const draw = async (said?: string) => {
    const [connections, domains] = await Promise.all([
      organizations.connections(org.id),
      canDomains ? organizations.domains(org.id) : Promise.resolve(null),
    ]);
    body.replaceChildren(
      connectionsPart(org, connections, draw),
      requirementPart(org, state, draw),
      addPart(org, draw),
      domains ? domainsPart(org, domains, draw) : '',
    );
    if (said) saySuccess(body, said);
  };
  await draw();
  return el;
}

type Draw = (said?: string) => Promise<void>;

function connectionsPart(org: Organization, connections: OrganizationConnection[], draw: Draw): HTMLElement {
  const alert = alertBox();
  const list = connections.length
    ? h(
        'ul',
        { class: 'items', id: 'connection-list' },
        connections.map((c) =>
          h(
            'li',
            { 'data-connection': c.id },
            h(
              'div',
              { class: 'item-main' },
              h('span', { class: 'identifier' }, c.name),
              h(
                'span',
                { class: 'item-meta connection-state' },
                c.enabled ? t('org.enabled') : t('org.disabled'),
              ),
              c.saml ? copyRow(t('org.metadataUrl'), c.saml.metadataUrl, 'metadataUrl') : null,
              c.saml ? copyRow(t('org.acsUrl'), c.saml.acsUrl, 'acsUrl') : null,
              c.oidc
                ? h(
                    'span',
                    { class: 'item-meta connection-oidc' },
                    t(c.oidc.clientSecretSet ? 'org.oidcSummarySecret' : 'org.oidcSummary', {
                      issuer: c.oidc.issuer,
                      clientId: c.oidc.clientId,
                    }),
                  )
                : null,
              c.oidc ? copyRow(t('org.redirectUri'), c.oidc.redirectUri, 'redirectUri') : null,
            ),
            h(
              'div',
              { class: 'actions' },
              actionButton(
                c.enabled ? t('org.disable') : t('org.enable'),
                alert,
                async () => {
                  await organizations.updateConnection(org.id, c.id, { enabled: !c.enabled });
                  await draw(t(c.enabled ? 'org.disabledNow' : 'org.enabledNow', { name: c.name }));
                },
                'secondary',
              ),
              actionButton(
                t('org.test'),
                alert,
                async () => {
                  // The IdP answers to #/sso-test, which shows what it sent (nobody is signed in).
                  location.assign(await organizations.testConnection(org.id, c.id));
                },
                'secondary',
                { 'aria-label': t('org.testLabel', { name: c.name }) },
              ),
              confirmButton({
                label: t('org.delete'),
                ariaLabel: t('org.deleteLabel', { name: c.name }),
                question: t('org.deleteQuestion', { name: c.name }),
                detail: t('org.deleteDetail'),
                confirm: t('org.delete'),
                alert,
                async run() {
                  await organizations.removeConnection(org.id, c.id);
                  await draw(t('org.deleted', { name: c.name }));
                },
              }),
            ),
          ),
        ),
      )
    : h('p', { class: 'hint' }, t('org.noConnections'));
  // The enable/disable buttons are named with the connection for a screen reader's list of buttons.
  list.querySelectorAll<HTMLElement>('li').forEach((li, i) => {
    const c = connections[i];
    const button = li.querySelector<HTMLButtonElement>('.actions button');
    if (c && button)
      button.setAttribute(
        'aria-label',
        t(c.enabled ? 'org.disableLabel' : 'org.enableLabel', { name: c.name }),
      );
  });
  return h('div', null, h('h3', { class: 'sso-subtitle' }, t('org.connections')), alert, list);
}

/**
 * Require SSO: on, the people of the verified domains sign in only through the IdP and are signed
 * out now (the caller too, when their address is in one of the domains); the confirmation says so.
 */
function requirementPart(org: Organization, state: { requireSso: boolean }, draw: Draw): HTMLElement {
  const alert = alertBox();
  const set = async (on: boolean) => {
    try {
      await organizations.setSsoRequirement(org.id, on);
    } catch (error) {
      throw inOwnWords(error, REQUIREMENT_WORDS());
    }
    state.requireSso = on;
    await draw(t(on ? 'org.requiredNow' : 'org.notRequiredNow'));
  };
  const control = state.requireSso
    ? actionButton(t('org.requireOff'), alert, () => set(false), 'secondary')
    : confirmButton({
        label: t('org.requireOn'),
        question: t('org.requireQuestion'),
        detail: t('org.requireDetail'),
        confirm: t('org.requireConfirm'),
        cls: 'secondary',
        alert,
        run: () => set(true),
      });
  return h(
    'div',
    { id: 'sso-requirement' },
    h('h3', { class: 'sso-subtitle' }, t('org.require')),
    h('p', { class: 'hint' }, t('org.requireIntro')),
    h(
      'p',
      { class: 'requirement-state', role: 'status' },
      state.requireSso ? t('org.requiredState') : t('org.notRequiredState'),
    ),
    alert,
    h('div', { class: 'actions' }, control),
  );
}

/**
 * Adds a connection: SAML 2.0 (the IdP's metadata pasted or chosen as a file, or its entity id,
 * sign-on URL and certificate) or OpenID Connect (issuer, client id and secret, and optionally the
 * claims carrying the address and names). The secret is sent once: the section is drawn anew after,
 * with empty fields, and a connection shows only that a secret is set.
 */
function addPart(org: Organization, draw: Draw): HTMLElement {
  const name = field({ label: t('org.name'), name: 'name', maxlength: 120, hint: t('org.nameHint') });
  const kindName = uid('connection-type');
  const choice = (value: 'saml' | 'oidc', label: string) => {
    const input = h('input', { type: 'radio', name: kindName, value, checked: value === 'saml' });
    return { input, label: h('label', null, input, label) };
  };
  const samlChoice = choice('saml', t('org.typeSaml'));
  const oidcChoice = choice('oidc', t('org.typeOidc'));
  const kind = h(
    'fieldset',
    { class: 'field', id: 'sso-add-type' },
    h('legend', null, t('org.type')),
    samlChoice.label,
    oidcChoice.label,
  );
  // SAML 2.0.
  const metadata = textArea(t('org.metadata'), 'metadataXml', t('org.metadataHint'));
  const fileId = uid('metadata-file');
  const file = h('input', {
    type: 'file',
    id: fileId,
    accept: '.xml,application/xml,text/xml,application/samlmetadata+xml',
    class: 'visually-hidden',
  });
  file.addEventListener('change', async () => {
    const chosen = file.files?.[0];
    if (chosen) metadata.area.value = await chosen.text();
  });
  const entityId = field({ label: t('org.entityId'), name: 'idpEntityId', required: false, maxlength: 1024 });
  const ssoUrl = field({
    label: t('org.ssoUrl'),
    name: 'ssoUrl',
    required: false,
    maxlength: 2048,
  });
  const certificate = textArea(t('org.certificate'), 'certificate');
  // Filled after the form is made: makeForm puts its fields first, and these parts take them back.
  const samlPart = h('div', { id: 'sso-add-saml' });
  // OpenID Connect: what POST /organizations/{id}/connections takes (scopes are openid email profile).
  const issuer = field({
    label: t('org.issuer'),
    name: 'issuer',
    maxlength: 2048,
    inputmode: 'url',
    hint: t('org.issuerHint'),
  });
  const clientId = field({ label: t('org.clientId'), name: 'clientId', maxlength: 256 });
  const clientSecret = field({
    label: t('org.clientSecret'),
    name: 'clientSecret',
    type: 'password',
    autocomplete: 'new-password',
    maxlength: 1024,
    hint: t('org.clientSecretHint'),
  });
  const claimField = (label: string, fieldName: string) =>
    field({ label, name: fieldName, required: false, maxlength: 256 });
  const emailClaim = claimField(t('org.emailClaim'), 'emailClaim');
  const givenClaim = claimField(t('org.givenNameClaim'), 'givenNameClaim');
  const familyClaim = claimField(t('org.familyNameClaim'), 'familyNameClaim');
  const oidcPart = h('div', { id: 'sso-add-oidc', hidden: true });
  const isOidc = () => oidcChoice.input.checked;
  const shown = () => {
    samlPart.hidden = isOidc();
    oidcPart.hidden = !isOidc();
  };
  samlChoice.input.addEventListener('change', shown);
  oidcChoice.input.addEventListener('change', shown);
  const enableId = uid('enable');
  const enable = h('input', { type: 'checkbox', id: enableId, name: 'enabled' });
  const form = makeForm({
    fields: [name, entityId, ssoUrl, issuer, clientId, clientSecret, emailClaim, givenClaim, familyClaim],
    extra: [
      name.wrap,
      kind,
      samlPart,
      oidcPart,
      h(
        'div',
        { class: 'field checkbox-field' },
        h('div', { class: 'checkbox-row' }, enable, h('label', { for: enableId }, t('org.enableNow'))),
      ),
    ],
    submit: t('org.submit'),
    async onSubmit() {
      const label = name.input.value.trim();
      const common = { name: label, enabled: enable.checked };
      let input: Parameters<typeof organizations.addConnection>[1];
      if (isOidc()) {
        const mapping = Object.fromEntries(
          (
            [
              ['email', emailClaim],
              ['givenName', givenClaim],
              ['familyName', familyClaim],
            ] as const
          )
            .map(([key, f]) => [key, f.input.value.trim()])
            .filter(([, value]) => value !== ''),
        );
        input = {
          type: 'oidc',
          ...common,
          oidc: {
            issuer: issuer.input.value.trim(),
            clientId: clientId.input.value.trim(),
            clientSecret: clientSecret.input.value,
          },
          ...(Object.keys(mapping).length ? { attributeMapping: mapping } : {}),
        };
      } else {
        const xml = metadata.area.value.trim();
        const manual = {
          idpEntityId: entityId.input.value.trim(),
          ssoUrl: ssoUrl.input.value.trim(),
          certificate: certificate.area.value.trim(),
        };
        if (!xml && (!manual.idpEntityId || !manual.ssoUrl || !manual.certificate))
          throw new Error(t('org.incomplete'));
        const saml = xml
          ? { metadataXml: xml }
          : {
              idpEntityId: manual.idpEntityId,
              ssoUrl: manual.ssoUrl,
              signingCertificates: [manual.certificate],
            };
        input = { type: 'saml', ...common, saml };
      }
      try {
        await organizations.addConnection(org.id, input);
      } catch (error) {
        if (isOidc() && asProblem(error).code === 'organization.connection_invalid')
          throw new FieldRefusal(t('org.oidcInvalid'), ['issuer', 'clientId', 'clientSecret']);
        throw inOwnWords(error, CONNECTION_WORDS());
      }
      // Drawn anew: the secret leaves the page, and is never shown again.
      await draw(t('org.added', { name: label }));
    },
  });
  samlPart.append(
    metadata.wrap,
    h(
      'p',
      null,
      file,
      h('label', { for: fileId, class: 'button secondary file-button' }, t('org.metadataFile')),
    ),
    h('h4', { class: 'sso-subtitle' }, t('org.manual')),
    entityId.wrap,
    ssoUrl.wrap,
    certificate.wrap,
  );
  oidcPart.append(
    issuer.wrap,
    clientId.wrap,
    clientSecret.wrap,
    h('h4', { class: 'sso-subtitle' }, t('org.claims')),
    h('p', { class: 'hint' }, t('org.claimsHint')),
    emailClaim.wrap,
    givenClaim.wrap,
    familyClaim.wrap,
  );
  return h('div', { id: 'sso-add' }, h('h3', { class: 'sso-subtitle' }, t('org.add')), form.el);
}

function domainsPart(org: Organization, domains: OrganizationDomain[], draw: Draw): HTMLElement {
  const alert = alertBox();
  const list = domains.length
    ? h(
        'ul',
        { class: 'items', id: 'domain-list' },
        domains.map((d) =>
          h(
            'li',
            { 'data-domain': d.domain },
            h(
              'div',
              { class: 'item-main' },
              h('span', { class: 'identifier' }, d.domain),
              h(
                'span',
                { class: 'item-meta domain-state' },
                d.verifiedAt ? t('org.verified') : t('org.unverified'),
              ),
              d.verifiedAt ? null : copyRow(t('org.txtName'), d.txtRecord.name, 'txtName'),
              d.verifiedAt ? null : copyRow(t('org.txtValue'), d.txtRecord.value, 'txtValue'),
            ),
            h(
              'div',
              { class: 'actions' },
              d.verifiedAt
                ? null
                : actionButton(t('org.verify'), alert, async () => {
                    try {
                      await organizations.verifyDomain(org.id, d.id);
                    } catch (error) {
                      throw inOwnWords(error, DOMAIN_WORDS());
                    }
                    await draw(t('org.verifiedNow', { domain: d.domain }));
                  }),
              confirmButton({
                label: t('org.removeDomain'),
                ariaLabel: t('org.removeDomainLabel', { domain: d.domain }),
                question: t('org.removeDomainQuestion', { domain: d.domain }),
                detail: t('org.removeDomainDetail'),
                confirm: t('org.removeDomain'),
                alert,
                async run() {
                  await organizations.removeDomain(org.id, d.id);
                  await draw(t('org.domainRemoved', { domain: d.domain }));
                },
              }),
            ),
          ),
        ),
      )
    : h('p', { class: 'hint' }, t('org.noDomains'));
  for (const button of list.querySelectorAll<HTMLButtonElement>('.actions button:not(.danger)')) {
    const domain = button.closest('li')?.getAttribute('data-domain');
    if (domain) button.setAttribute('aria-label', t('org.verifyLabel', { domain }));
  }
  const domain = field({ label: t('org.domain'), name: 'domain', maxlength: 300, hint: t('org.domainHint') });
  const form = makeForm({
    fields: [domain],
    submit: t('org.addDomain'),
    async onSubmit() {
      const value = domain.input.value.trim();
      try {
        await organizations.addDomain(org.id, value);
      } catch (error) {
        throw inOwnWords(error, DOMAIN_WORDS());
      }
      await draw(t('org.domainAdded', { domain: value }));
    },
  });
  return h(
    'div',
    { id: 'sso-domains' },
    h('h3', { class: 'sso-subtitle' }, t('org.domains')),
    h('p', { class: 'hint' }, t('org.domainsIntro')),
    alert,
    list,
    form.el,
  );
}
