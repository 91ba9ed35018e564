import { api, asProblem, organizations } from '../api.js';
import { h } from '../dom.js';
import { makeForm } from '../forms.js';
import { roleName, t } from '../messages/organizations.js';
import { go, type PageContent } from '../router.js';
import { elevated } from '../stepup.js';
import { setFlash } from './organizations.js';
import { card } from './security/common.js';

/**
 * #/organizations/<id>/transfer: an owner hands the ownership to another member (POST
 * …/ownership-transfers): they become an owner, the caller an admin, once the caller has confirmed
 * it is them (the step-up, asked right there). Only an owner is offered it; anyone else, or an
 * organization without another member, is told why.
 */
export async function transferPage(id: string): Promise<PageContent> {
  const back = h('p', { class: 'back-link' }, h('a', { href: `#/organizations/${id}` }, t('transfer.back')));
  const title = t('transfer.title');
  let org: Awaited<ReturnType<typeof organizations.get>>;
  try {
    org = await organizations.get(id);
  } catch (error) {
    if (asProblem(error).code !== 'organization.not_found' && asProblem(error).status !== 400) throw error;
    return { title, body: [back, h('p', { class: 'alert', role: 'alert' }, t('org.notFound'))] };
  }
  const { el } = card('transfer', t('transfer.heading', { org: org.name }));
  if (org.role !== 'owner') {
    el.append(h('p', { class: 'alert', role: 'alert' }, t('transfer.notOwner')));
    return { title, body: [back, el] };
  }
  const [members, context] = await Promise.all([organizations.members(id), api.context()]);
  const candidates = members.filter((m) => m.identityId !== context.identityId);
  if (candidates.length === 0) {
    el.append(h('p', { id: 'transfer-none' }, t('transfer.none')));
    return { title, body: [back, el] };
  }
  const selectId = 'transfer-member';
  const select = h(
    'select',
    { id: selectId, name: 'identityId' },
    candidates.map((m) => {
      const who =
        m.name && m.display ? `${m.name} (${m.display})` : (m.name ?? m.display ?? t('members.unnamed'));
      return h(
        'option',
        { value: m.identityId },
        t('transfer.option', { name: who, role: roleName(m.role) }),
      );
    }),
  );
  const slot = h('div');
  const form = makeForm({
    fields: [],
    extra: [
      h('div', { class: 'field org-role' }, h('label', { for: selectId }, t('transfer.member')), select),
      slot,
    ],
    submit: t('transfer.submit'),
    async onSubmit() {
      const chosen = candidates.find((m) => m.identityId === select.value);
      const name = chosen?.name ?? chosen?.display ?? t('members.unnamed');
      const target = select.value;
      await elevated(slot, (token) => organizations.transfer(id, target, token));
      setFlash(t('transfer.done', { name, org: org.name }), true);
      go(`/organizations/${id}`);
    },
  });
  el.append(h('p', null, t('transfer.intro')), h('p', { class: 'hint' }, t('transfer.stepUp')), form.el);
  return { title, body: [back, el] };
}
