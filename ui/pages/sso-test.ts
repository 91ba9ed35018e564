import { asProblem, type ConnectionTestResult, organizations } from '../api.js';
import { h } from '../dom.js';
import { pendingStep } from '../identifier.js';
import { t } from '../messages/sso.js';
import { takeProviderReturn } from '../providers.js';
import type { PageContent } from '../router.js';

/*
 * The result of a connection test (docs/sso.md, "Testing a connection"): `#/sso-test?result=<code>`.
 * The IdP's answer was checked as for a sign-in, and nobody was signed in; the page shows which
 * checks passed and what the IdP sent. The code leaves the address bar at once (providers.ts) and
 * is kept for this tab only (sessionStorage), for a redraw; the service shows the result only to
 * the session that started the test, in this browser.
 */
const KEY = 'sso-test';

type Check = ConnectionTestResult['checks'][number];

function checkRow(c: Check): HTMLElement {
  return h(
    'li',
    { 'data-check': c.check, class: c.passed ? 'check-passed' : 'check-failed' },
    h('span', { class: 'identifier' }, t(`check.${c.check}`)),
    h('span', { class: 'item-meta' }, c.passed ? t('test.ok') : t('test.notOk')),
    c.reason ? h('span', { class: 'item-meta' }, t('test.reason', { reason: c.reason })) : null,
  );
}

function valueText(value: unknown): string {
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function gone(): (Node | string)[] {
  return [
    h('p', { class: 'alert', role: 'alert', tabindex: '-1' }, t('test.gone')),
    h('p', null, h('a', { href: '#/organizations' }, t('test.back'))),
  ];
}

export async function ssoTestPage(): Promise<PageContent> {
  const title = t('test.title');
  const back = takeProviderReturn('/sso-test');
  if (back?.result) pendingStep.write(KEY, { code: back.result });
  const pending = pendingStep.read<{ code: string }>(KEY);
  if (!pending) return { title, body: gone() };
  let result: ConnectionTestResult;
  try {
    result = await organizations.connectionTestResult(pending.code);
  } catch (error) {
    if (asProblem(error).code !== 'organization.connection_test_not_found') throw error;
    pendingStep.clear(KEY);
    return { title, body: gone() };
  }
  const attributes = Object.entries(result.attributes);
  const none = h('span', { class: 'hint' }, t('test.none'));
  const section = h(
    'section',
    { class: 'card', id: 'sso-test', 'aria-labelledby': 'sso-test-summary' },
    h('p', null, t('test.intro')),
    h(
      'p',
      {
        id: 'sso-test-summary',
        class: result.passed ? 'success' : 'alert',
        role: 'status',
        'data-passed': String(result.passed),
      },
      result.passed ? t('test.passed') : t('test.failed'),
    ),
    h(
      'dl',
      { class: 'sso-continue' },
      h('dt', null, t('test.connection')),
      h('dd', { id: 'sso-test-connection' }, result.connection.name),
      h('dt', null, t('test.subject')),
      h('dd', { id: 'sso-test-subject' }, result.subject ?? none.cloneNode(true)),
      result.nameIdFormat ? h('dt', null, t('test.nameIdFormat')) : null,
      result.nameIdFormat ? h('dd', null, result.nameIdFormat) : null,
      h('dt', null, t('test.email')),
      h('dd', { id: 'sso-test-email' }, result.email ?? none.cloneNode(true)),
    ),
    h('h2', null, t('test.checks')),
    h('ul', { class: 'items', id: 'sso-test-checks' }, result.checks.map(checkRow)),
    h('h2', null, t('test.attributes')),
    attributes.length
      ? h(
          'table',
          { id: 'sso-test-attributes' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              h('th', { scope: 'col' }, t('test.attribute')),
              h('th', { scope: 'col' }, t('test.value')),
            ),
          ),
          h(
            'tbody',
            null,
            attributes.map(([name, value]) =>
              h('tr', null, h('th', { scope: 'row' }, name), h('td', null, valueText(value))),
            ),
          ),
        )
      : h('p', { class: 'hint' }, t('test.none')),
    h('p', null, h('a', { href: `#/organizations/${result.organizationId}` }, t('test.back'))),
  );
  return { title, body: [section] };
}

/**
 * Where an operator's connection test lands (`#/sso-test-done`, or `?error=gone` for a start link
 * already used or expired): the result is not here but in the operators' console, for the operator
 * who started the test; nobody was signed in.
 */
export function ssoTestDonePage(): PageContent {
  const back = takeProviderReturn('/sso-test-done');
  const spent = back?.error === 'gone';
  return {
    title: t('test.title'),
    body: [
      h(
        'section',
        { class: 'card', id: 'sso-test-done' },
        h(
          'p',
          spent ? { class: 'alert', role: 'alert', tabindex: '-1' } : { class: 'success', role: 'status' },
          spent ? t('test.startGone') : t('test.operatorDone'),
        ),
        spent ? null : h('p', null, t('test.intro')),
      ),
    ],
  };
}
