import { waitPhrase } from './wait.js';

/** What a person reads for a refusal: the catalogue's codes in plain words, else the service's detail. */
const MESSAGES: Record<string, string> = {
  'identity.sign_in_refused': 'That email or phone number and password do not match an account.',
  'ui.sign_up_confirmation_refused':
    'That code and password were not accepted. Check the newest message we sent and the password you chose.',
  'identity.second_factor_refused': 'That code was not accepted. Check it and try again, or sign in again.',
  'identity.sign_in_second_factor_locked': 'Too many wrong codes: the account is locked for a while.',
  'identity.verification_refused': 'That code was not accepted. Check the newest message we sent.',
  'identity.identifier_taken': 'That address is already in use.',
  'identity.identifier_unusable': 'That address cannot be used. Check it for typos.',
  'identity.identifier_channel_unavailable': 'We cannot send messages to that address.',
  'identity.password_recovery_refused': 'That code was not accepted. Check the newest message we sent.',
  'identity.password_change_refused': 'Your current password is not right.',
  'identity.step_up_confirmation_refused': 'That code was not accepted. Try again.',
  'identity.step_up_locked': 'Too many wrong codes: the account is locked for a while.',
  'identity.step_up_unavailable': 'There is no way to confirm it is you on this account.',
  'identity.second_factor_confirmation_refused': 'That code was not accepted. Check the time on your phone.',
  'identity.second_factor_locked': 'Too many wrong codes: the account is locked for a while.',
  'identity.sign_in_method_confirmation_refused': 'That code was not accepted.',
  'identity.sign_in_method_locked': 'Too many wrong codes: the account is locked for a while.',
  'identity.last_sign_in_method': 'This is your last way in, so it cannot be removed.',
  'identity.session_required': 'Your session has ended. Please sign in again.',
  'identity.elevation_required': 'Please confirm it is you first.',
  'identity.cross_site_refused': 'This page could not reach your account. Reload it and try again.',
  'identity.renewal_refused': 'Your session has ended. Please sign in again.',
  'rate_limit.exceeded': 'Too many attempts. Wait a moment and try again.',
  'service.unavailable': 'The service is busy. Try again in a moment.',
};

export interface ProblemLike {
  code?: string;
  status?: number;
  detail?: string;
  retryAfter?: number | null;
  errors?: { field?: string; code?: string; message?: string }[];
}

export function messageFor(p: ProblemLike): string {
  if (p.code === 'validation.failed' && p.errors?.length) {
    return 'Please correct the highlighted fields.';
  }
  const known = p.code ? MESSAGES[p.code] : undefined;
  if (known && p.code === 'rate_limit.exceeded' && p.retryAfter) {
    return `Too many attempts. Try again in ${waitPhrase(p.retryAfter)}.`;
  }
  return known ?? p.detail ?? 'Something went wrong. Try again.';
}

/** A field's message from a validation refusal, in the person's words. */
export function fieldMessage(error: { code?: string; message?: string }): string {
  // The service's own reason, built from zxcvbn's fixed sentences (never the password).
  if (error.code === 'weak_password') return error.message ?? 'This password is too easy to guess.';
  if (error.code === 'minLength') return 'This is too short.';
  if (error.code === 'maxLength') return 'This is too long.';
  if (error.code === 'pattern') return 'This does not have the expected format.';
  return error.message ?? 'This is not valid.';
}

/** The person closed a step-up: nothing to report. */
export class Cancelled extends Error {
  constructor() {
    super('cancelled');
  }
}
