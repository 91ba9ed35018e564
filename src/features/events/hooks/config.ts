import { Type } from '@sinclair/typebox';
import { ConfigError, formatted, integer, section } from '../../../config/schema.js';

/** The three synchronous hooks (docs/events.md, "Synchronous hooks"). */
export const HOOK_NAMES = ['before_identity_created', 'before_sign_in', 'custom_claims'] as const;
export type HookName = (typeof HOOK_NAMES)[number];

const NAME = `(${HOOK_NAMES.join('|')})`;

export interface HooksConfig {
  /** The URL of each configured hook; a hook without one is never called. */
  urls: Partial<Record<HookName, string>>;
  /** HOOKS_SECRET (`whsec_…`), the one signing secret of every hook call. */
  secret: string | undefined;
  /** The hooks that let the act proceed when they time out or fail (HOOKS_FAIL_OPEN). */
  failOpen: ReadonlySet<HookName>;
  timeoutMs: number;
}

const url = (hook: HookName) =>
  formatted('http-url', 'must be an absolute http(s) URL', {
    description: `the \`${hook}\` hook's URL: one signed POST (docs/events.md, "Synchronous hooks"); unset: never called`,
    shown: 'unset',
  });

/** Synchronous hooks: configured per deployment, signed like a webhook delivery. */
export const hooksSection = section({
  variables: {
    HOOK_BEFORE_IDENTITY_CREATED_URL: url('before_identity_created'),
    HOOK_BEFORE_SIGN_IN_URL: url('before_sign_in'),
    HOOK_CUSTOM_CLAIMS_URL: url('custom_claims'),
    HOOKS_SECRET: Type.Optional(
      Type.String({
        pattern: '^whsec_[A-Za-z0-9+/]{32,}={0,2}$',
        refusal: 'must be a Standard Webhooks secret: whsec_ and at least 24 bytes in base64',
        description:
          'the secret every hook call is signed with (Standard Webhooks `v1`, as a webhook delivery); required when a hook URL is set',
        shown: 'unset',
      }),
    ),
    HOOKS_FAIL_OPEN: Type.String({
      default: 'off',
      pattern: `^(off|on|${NAME}(,${NAME})*)$`,
      refusal: `must be off, on, or a comma-separated list of ${HOOK_NAMES.join(', ')}`,
      description:
        'what a hook that times out, fails or answers something unreadable does: `off` the act is refused (`hooks.unavailable`, 503); `on` it proceeds as if the hook had allowed it (and added no claim); or the list of the hooks that fail open',
    }),
    HOOK_TIMEOUT_MS: integer(2000, 10, 10000, {
      description: 'the most a hook call may take, connection included, before it counts as failed',
    }),
  },
  map: (e) => {
    const urls: Partial<Record<HookName, string>> = {};
    if (e.HOOK_BEFORE_IDENTITY_CREATED_URL) urls.before_identity_created = e.HOOK_BEFORE_IDENTITY_CREATED_URL;
    if (e.HOOK_BEFORE_SIGN_IN_URL) urls.before_sign_in = e.HOOK_BEFORE_SIGN_IN_URL;
    if (e.HOOK_CUSTOM_CLAIMS_URL) urls.custom_claims = e.HOOK_CUSTOM_CLAIMS_URL;
    // A hook URL with nothing to sign its calls with would be an unauthenticated call: refused.
    if (Object.keys(urls).length > 0 && !e.HOOKS_SECRET) {
      throw new ConfigError('HOOKS_SECRET', 'is required when a hook URL is set');
    }
    const open = e.HOOKS_FAIL_OPEN;
    const failOpen = new Set<HookName>(
      open === 'on' ? HOOK_NAMES : open === 'off' ? [] : (open.split(',') as HookName[]),
    );
    const hooks: HooksConfig = { urls, secret: e.HOOKS_SECRET, failOpen, timeoutMs: e.HOOK_TIMEOUT_MS };
    return { hooks };
  },
});
