import { t } from './messages/forms.js';
import { t as strength } from './messages/strength.js';
import { adviceShown } from './strength.js';
import { waitPhrase } from './wait.js';

/** The refusals named in the catalogue (ui/messages/forms.ts), by their code. */
const KNOWN = new Set([
  'identity.sign_in_refused',
  'identity.sso_required',
  'ui.sign_up_confirmation_refused',
  'identity.second_factor_refused',
  'identity.sign_in_second_factor_locked',
  'identity.verification_refused',
  'identity.identifier_taken',
  'identity.identifier_unusable',
  'identity.identifier_channel_unavailable',
  'identity.picture_unusable',
  'request.body_too_large',
  'request.unsupported_media_type',
  'identity.password_recovery_refused',
  'identity.password_change_refused',
  'identity.step_up_confirmation_refused',
  'identity.step_up_locked',
  'identity.step_up_unavailable',
  'identity.second_factor_confirmation_refused',
  'identity.second_factor_locked',
  'identity.sign_in_method_confirmation_refused',
  'identity.sign_in_method_locked',
  'identity.last_sign_in_method',
  'identity.password_exists',
  'identity.account_deletion_refused',
  'identity.account_deletion_last_owner',
  'identity.session_required',
  'identity.elevation_required',
  'identity.cross_site_refused',
  'identity.renewal_refused',
  'rate_limit.exceeded',
  'service.unavailable',
  'hooks.refused',
  'hooks.unavailable',
  'ui.passkey_cancelled',
  'ui.passkey_none',
  'ui.code_expired',
  'ui.sign_in_code_refused',
] as const);
type Known = typeof KNOWN extends Set<infer K> ? K : never;
const isKnown = (code: string | undefined): code is Known => !!code && KNOWN.has(code as Known);

/**
 * Whether the service's own words (English) may be shown as they are: only on a page in plain
 * English (not French, not the pseudo-locale, where they would pass for untranslated text).
 */
const serverWordsFit = () => document.documentElement.lang === 'en';
export interface ProblemLike {
  code?: string;
  status?: number;
  detail?: string;
  retryAfter?: number | null;
  /** hooks.refused: the deployment's own words, shown as given in every language. */
  hookMessage?: string;
  errors?: { field?: string; code?: string; message?: string }[];
}

/**
 * What a person reads for a refusal: the catalogue's codes in plain words, in the page's language.
 * A code the catalogue does not know shows the service's detail in English only (it is English);
 * in another language, the catalogue's general sentence.
 */
export function messageFor(p: ProblemLike): string {
  if (p.code === 'validation.failed' && p.errors?.length) return t('correctFields');
  if (p.code === 'rate_limit.exceeded' && p.retryAfter) {
    return t('tooManyWait', { wait: waitPhrase(p.retryAfter) });
  }
  // The deployment's hook wrote its refusal for its people: shown as given, not translated.
  if (p.code === 'hooks.refused' && p.hookMessage) return p.hookMessage;
  if (isKnown(p.code)) return t(p.code);
  // The pages' own errors (new Error(sentence)) carry a catalogue sentence already.
  if (p.detail && (p.code === 'ui.unexpected' || serverWordsFit())) return p.detail;
  return t('somethingWrong');
}

/** A field's message from a validation refusal, in the person's words. */
export function fieldMessage(error: { field?: string; code?: string; message?: string }): string {
  if (error.code === 'weak_password') {
    // The service's reason is zxcvbn's advice in English, for API clients. The page says why in
    // its own language: the advice its strength meter (the same rule, ui/strength.ts) gave for
    // the password typed; without it, the service's words on a page in English, else the
    // catalogue's general sentence.
    const advice = adviceShown(error.field);
    if (advice) return strength('refusedWeak', { advice });
    return serverWordsFit() && error.message ? error.message : t('weakPassword');
  }
  // Found in a breach (the bundled list or the range API): the page's own sentence in its language.
  if (error.code === 'breached_password') return t('breachedPassword');
  if (error.code === 'code_expired') return t('codeExpired');
  if (error.code === 'minLength') return t('tooShort');
  if (error.code === 'maxLength') return t('tooLong');
  if (error.code === 'pattern') return t('pattern');
  return serverWordsFit() && error.message ? error.message : t('invalid');
}

/** The person closed a step-up: nothing to report. */
export class Cancelled extends Error {
  constructor() {
    super('cancelled');
  }
}
