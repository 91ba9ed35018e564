import { api, asProblem, type InvitationLookup, organizations } from '../api.js';
import { formatDate, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { type IdentifierForm, pendingStep } from '../identifier.js';
import { rememberRoles, roleName, t } from '../messages/organizations.js';
import type { PageContent } from '../router.js';
import { refreshSwitcher } from './organizations.js';

/*
 * An invitation's link is `/account/#/invitations/<token>`: the token is in the fragment, which a
 * browser never sends. The page takes it out of the address bar and history at once (into this
 * tab's sessionStorage, as a flow's pending step) and shows `#/invitation`; a person who must sign
 * in or create an account first comes back to it afterwards. The token only ever travels in the
 * bodies of the lookup and acceptance requests.
 */
interface Pending {
  token: string;
  /** Set when the person left to sign in or sign up: the next home page comes back here. */
  back: boolean;
  /**
   * The invited address, set when the person left to create an account: the sign-up page fills it
   * in, read-only (ui/pages/sign-up.ts reads this same step).
   */
  invited?: IdentifierForm;
}
const KEY = 'invitation';
const LINK = /^\/invitations\/([A-Za-z0-9_-]{16,512})$/;

/** `#/invitations/<token>` becomes `#/invitation`, the token kept for this tab; answers the route. */
export function captureInvitation(path: string): string {
  const m = LINK.exec(path);
  if (!m) return path;
  pendingStep.write(KEY, { token: m[1], back: false } satisfies Pending);
  history.replaceState(history.state, '', `${location.pathname}${location.search}#/invitation`);
  return '/invitation';
}

/** Whether a sign-in or sign-up just ended that started from an invitation (asked once). */
export function backToInvitation(): boolean {
  const pending = pendingStep.read<Pending>(KEY);
  if (!pending?.back) return false;
  pendingStep.write(KEY, { token: pending.token, back: false } satisfies Pending);
  return true;
}

/** Each refusal in the person's words; `view` names the organization and the address when known. */
function refusal(code: string | undefined, view: InvitationLookup | null): string | null {
  switch (code) {
    case 'organization.invitation_not_found':
      return t('invitation.notFound');
    case 'organization.invitation_expired':
      return t('invitation.expired');
    case 'organization.invitation_revoked':
      return t('invitation.revoked');
    case 'organization.invitation_accepted':
      return t('invitation.alreadyAccepted');
    case 'organization.invitation_wrong_identity':
      return t('invitation.wrongIdentity', { identifier: view?.identifier ?? '—' });
    case 'organization.already_member':
      return t('invitation.alreadyMember', { org: view?.organization.name ?? '—' });
    default:
      return null;
  }
}

const home = () => h('p', null, h('a', { href: '#/' }, t('invitation.home')));

/** #/invitation: what the invitation is, then "Accept" (signed in) or the way to sign in first. */
export async function invitationPage(): Promise<PageContent> {
  const title = t('invitation.title');
  const pending = pendingStep.read<Pending>(KEY);
  if (!pending) return { title, body: [h('p', { class: 'alert', role: 'alert' }, t('invitation.missing'))] };
  let view: InvitationLookup;
  try {
    view = await organizations.lookUpInvitation(pending.token);
  } catch (error) {
    const text = refusal(asProblem(error).code, null);
    if (!text) throw error;
    // Nothing more can be done with this token.
    pendingStep.clear(KEY);
    return {
      title,
      body: [h('p', { class: 'alert', role: 'alert', id: 'invitation-refused' }, text), home()],
    };
  }
  const org = view.organization.name;
  rememberRoles([{ name: view.role, displayName: view.roleDisplayName }]);
  const by = view.invitedBy;
  const inviter = by?.name && by.identifier ? `${by.name} (${by.identifier})` : (by?.name ?? by?.identifier);
  const what = h(
    'section',
    { class: 'card sign-in-card', id: 'invitation', 'aria-labelledby': 'invitation-what' },
    h(
      'h2',
      { id: 'invitation-what' },
      inviter
        ? t('invitation.whatFrom', { inviter, org, role: roleName(view.role) })
        : t('invitation.what', { org, role: roleName(view.role) }),
    ),
    h(
      'p',
      { class: 'hint' },
      t('invitation.sentTo', { identifier: view.identifier, when: formatDate(view.expiresAt) }),
    ),
  );
  if (!(await api.signedIn())) {
    // An account is created for the invited address: the sign-up page fills it in, read-only.
    const invited: IdentifierForm =
      view.identifierType === 'email'
        ? { identifierType: 'email', identifier: view.identifier }
        : { identifierType: 'phone', identifier: view.identifier, country: '' };
    const leave = (to: string, label: string, cls: string) =>
      h(
        'a',
        {
          class: cls,
          href: `#${to}`,
          onclick: () =>
            pendingStep.write(KEY, {
              token: pending.token,
              back: true,
              ...(to === '/sign-up' ? { invited } : {}),
            } satisfies Pending),
        },
        label,
      );
    what.append(
      h('p', null, t('invitation.signedOut', { identifier: view.identifier })),
      h(
        'div',
        { class: 'actions' },
        leave('/sign-in', t('invitation.signIn'), 'button'),
        leave('/sign-up', t('invitation.signUp'), 'button secondary'),
      ),
    );
    return { title, body: [what] };
  }
  const alert = alertBox();
  const outcome = h('div');
  const accept = actionButton(
    t('invitation.accept'),
    alert,
    async () => {
      let joined: Awaited<ReturnType<typeof organizations.acceptInvitation>>;
      try {
        joined = await organizations.acceptInvitation(pending.token);
      } catch (error) {
        const code = asProblem(error).code;
        const text = refusal(code, view);
        if (!text) throw error;
        // A wrong account may still sign in with the right one; anything else is final.
        if (code !== 'organization.invitation_wrong_identity') {
          pendingStep.clear(KEY);
          accept.remove();
        }
        throw new Error(text);
      }
      pendingStep.clear(KEY);
      const note = h(
        'p',
        { class: 'notice', role: 'status', tabindex: '-1' },
        t('invitation.accepted', { org: joined.organization.name, role: roleName(joined.organization.role) }),
      );
      outcome.replaceChildren(
        note,
        h(
          'p',
          null,
          h('a', { href: `#/organizations/${joined.organization.id}` }, t('invitation.open', { org })),
        ),
      );
      accept.remove();
      note.focus();
      // The frame's switcher offers the new organization.
      refreshSwitcher();
    },
    'primary',
  );
  what.append(alert, outcome, h('div', { class: 'actions' }, accept));
  return { title, body: [what] };
}
