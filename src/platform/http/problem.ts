/**
 * The one error catalogue. A refusal is `new Problem(code)`: status, title and detail come from
 * here, so two refusals of one family are byte-identical by construction. No detail ever carries
 * request data.
 */
export const CATALOGUE = {
  'validation.failed': [400, 'Validation failed', 'The request is not valid.', false],
  'collection.cursor_tampered': [400, 'Cursor tampered', 'The cursor signature does not verify.', false],
  'collection.cursor_invalid': [400, 'Cursor invalid', 'The cursor cannot be used here.', false],
  'collection.cursor_expired': [
    400,
    'Cursor expired',
    'The cursor has expired; start again from the first page.',
    false,
  ],
  'identity.session_required': [401, 'Session required', 'A valid session is required.', false],
  'admin.unauthorized': [401, 'Unauthorized', 'A valid operator key is required.', false],
  'identity.sign_in_refused': [401, 'Sign-in refused', 'The sign-in was refused.', false],
  'identity.second_factor_refused': [401, 'Second factor refused', 'The second step was refused.', false],
  'identity.renewal_refused': [401, 'Renewal refused', 'The renewal was refused.', false],
  'identity.elevation_required': [
    403,
    'Elevation required',
    'A live elevation for this session is required.',
    false,
  ],
  'identity.step_up_confirmation_refused': [
    403,
    'Step-up refused',
    'The step-up confirmation was refused.',
    false,
  ],
  'identity.second_factor_confirmation_refused': [
    403,
    'Second factor confirmation refused',
    'The second factor could not be confirmed.',
    false,
  ],
  'identity.sign_in_method_not_found': [404, 'Sign-in method not found', 'No such sign-in method.', false],
  'identity.second_factor_not_found': [404, 'Second factor not found', 'No such second factor.', false],
  'identity.session_not_found': [404, 'Session not found', 'No such live session.', false],
  'route.not_found': [404, 'Not found', 'No route matches this method and path.', false],
  'admin.identity_not_found': [404, 'Identity not found', 'No such identity.', false],
  'identity.identifier_taken': [409, 'Identifier taken', 'The identifier is already in use.', false],
  'admin.identity_erased': [
    409,
    'Identity erased',
    'The identity was erased; nothing more can change it.',
    false,
  ],
  'identity.last_sign_in_method': [
    409,
    'Last sign-in method',
    'Removing this method would leave no way in.',
    false,
  ],
  'idempotency.key_reused': [
    409,
    'Idempotency key reused',
    'The idempotency key was used with different content.',
    false,
  ],
  'precondition.failed': [412, 'Precondition failed', 'The resource does not match the precondition.', false],
  'request.body_too_large': [413, 'Body too large', 'The request body exceeds 16 KiB.', false],
  'request.unsupported_media_type': [
    415,
    'Unsupported media type',
    'The request body must be application/json.',
    false,
  ],
  'identity.identifier_unusable': [422, 'Identifier unusable', 'The identifier cannot be used.', false],
  'identity.identifier_channel_unavailable': [
    422,
    'No channel',
    'No channel can deliver to this identifier.',
    false,
  ],
  'identity.verification_refused': [422, 'Verification refused', 'The verification was refused.', false],
  'identity.sign_in_method_confirmation_refused': [
    422,
    'Confirmation refused',
    'The sign-in method confirmation was refused.',
    false,
  ],
  'identity.password_change_refused': [
    422,
    'Password change refused',
    'The password change was refused.',
    false,
  ],
  'identity.password_recovery_refused': [
    422,
    'Password recovery refused',
    'The password recovery was refused.',
    false,
  ],
  'identity.step_up_unavailable': [422, 'Step-up unavailable', 'No step-up channel is available.', false],
  'identity.sign_in_second_factor_locked': [
    423,
    'Account locked',
    'The account is locked after repeated failures.',
    false,
  ],
  'identity.sign_in_method_locked': [
    423,
    'Account locked',
    'The account is locked after repeated failures.',
    false,
  ],
  'identity.second_factor_locked': [
    423,
    'Account locked',
    'The account is locked after repeated failures.',
    false,
  ],
  'identity.step_up_locked': [423, 'Account locked', 'The account is locked after repeated failures.', false],
  'rate_limit.exceeded': [
    429,
    'Too many requests',
    'The rate limit for this route is exceeded; retry later.',
    true,
  ],
  'internal.unexpected': [500, 'Internal error', 'An unexpected error occurred.', false],
  'service.unavailable': [
    503,
    'Service unavailable',
    'The service is temporarily unavailable; retry later.',
    true,
  ],
} as const satisfies Record<string, readonly [number, string, string, boolean]>;

export type ProblemCode = keyof typeof CATALOGUE;

export interface ValidationEntry {
  location: 'body' | 'query' | 'path' | 'header';
  field: string;
  code: string;
  message: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  retryable: boolean;
  errors?: ValidationEntry[];
}

export class Problem extends Error {
  readonly status: number;
  constructor(
    readonly code: ProblemCode,
    readonly extra: { errors?: ValidationEntry[]; headers?: Record<string, string> } = {},
  ) {
    super(code);
    this.status = CATALOGUE[code][0];
  }

  body(): ProblemBody {
    const [status, title, detail, retryable] = CATALOGUE[this.code];
    const body: ProblemBody = {
      type: `/problems/${this.code}`,
      title,
      status,
      detail,
      code: this.code,
      retryable,
    };
    if (this.extra.errors) body.errors = this.extra.errors;
    return body;
  }
}

/**
 * Interface 5.2: the one refusal of a missing, forged, revoked or wrong-kind session credential,
 * with the same header whatever the cause, so no cause is told apart by its headers either.
 */
export function sessionRequired(): Problem {
  return new Problem('identity.session_required', { headers: { 'www-authenticate': 'Bearer' } });
}
