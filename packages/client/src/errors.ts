import type { components } from './generated/openapi.js';

/** Problem Details (RFC 9457) as the service answers them. */
export type Problem = components['schemas']['Problem'];

/** One entry of a validation refusal's `errors`. */
export type ProblemFieldError = NonNullable<Problem['errors']>[number];

/**
 * Codes the client itself raises, where the service gave no Problem Details:
 * - `client.network_error`: the request did not get an answer (status 0, retryable);
 * - `client.unexpected_response`: an answer that is not Problem Details (a proxy's HTML page);
 * - `client.signed_out`: an authenticated method called with no session and no access token.
 */
export type ClientErrorCode = 'client.network_error' | 'client.unexpected_response' | 'client.signed_out';

/**
 * The one error every method throws: the service's Problem Details, or one of the client's own
 * codes (`ClientErrorCode`). Branch on `code`, never on `title` or `detail`.
 */
export class IdentityError extends Error {
  override readonly name = 'IdentityError';
  /** Stable machine code, e.g. `identity.sign_in_refused`. */
  readonly code: string;
  /** HTTP status; 0 when no answer arrived. */
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  /** URI reference naming the class of problem. */
  readonly type: string;
  /** The service says an identical request may succeed later; alone it never authorises repeating a write. */
  readonly retryable: boolean;
  /** Validation entries (400 validation.failed). */
  readonly errors: readonly ProblemFieldError[];
  /** Seconds to wait before trying again, from the Retry-After header, when the service sent one. */
  readonly retryAfter: number | undefined;
  /** The X-Request-Id header: the attempt, as the service's logs name it. */
  readonly requestId: string | undefined;
  /** `hooks.refused` only: the deployment's own words for the refusal, to show as they are. */
  readonly hookMessage: string | undefined;

  constructor(problem: Problem, options: { retryAfter?: number; requestId?: string; cause?: unknown } = {}) {
    super(
      `${problem.code}: ${problem.detail}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = problem.code;
    this.status = problem.status;
    this.title = problem.title;
    this.detail = problem.detail;
    this.type = problem.type;
    this.retryable = problem.retryable;
    this.errors = problem.errors ?? [];
    this.retryAfter = options.retryAfter;
    this.requestId = options.requestId;
    this.hookMessage = problem.hookMessage;
  }

  /** The Problem Details this error carries. */
  toProblem(): Problem {
    const problem: Problem = {
      type: this.type,
      title: this.title,
      status: this.status,
      detail: this.detail,
      code: this.code,
      retryable: this.retryable,
    };
    if (this.errors.length > 0) problem.errors = [...this.errors];
    if (this.hookMessage !== undefined) problem.hookMessage = this.hookMessage;
    return problem;
  }
}

/** Instanceof that also holds across two copies of the package (a bundle and node_modules). */
export function isIdentityError(value: unknown): value is IdentityError {
  return value instanceof IdentityError || (value instanceof Error && value.name === 'IdentityError');
}

function clientProblem(code: ClientErrorCode, status: number, detail: string, retryable: boolean): Problem {
  return { type: `/problems/${code}`, title: detail, status, detail, code, retryable };
}

export function networkError(cause: unknown): IdentityError {
  return new IdentityError(
    clientProblem('client.network_error', 0, 'The service could not be reached.', true),
    { cause },
  );
}

export function signedOutError(): IdentityError {
  return new IdentityError(
    clientProblem('client.signed_out', 401, 'There is no session: sign in first.', false),
  );
}

/**
 * Retry-After as seconds: delta-seconds, or an HTTP date measured against the local clock (the only
 * form where the local clock matters; the service sends delta-seconds).
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

function isProblem(body: unknown): body is Problem {
  if (typeof body !== 'object' || body === null) return false;
  const p = body as Record<string, unknown>;
  return typeof p.code === 'string' && typeof p.status === 'number' && typeof p.retryable === 'boolean';
}

/** The error for a non-2xx answer and its (already parsed) body. */
export function responseError(response: Response, body: unknown): IdentityError {
  const options = {
    retryAfter: parseRetryAfter(response.headers.get('retry-after')),
    requestId: response.headers.get('x-request-id') ?? undefined,
  };
  if (isProblem(body)) {
    return new IdentityError(
      {
        type: typeof body.type === 'string' ? body.type : `/problems/${body.code}`,
        title: typeof body.title === 'string' ? body.title : body.code,
        status: body.status,
        detail: typeof body.detail === 'string' ? body.detail : body.code,
        code: body.code,
        retryable: body.retryable,
        ...(Array.isArray(body.errors) ? { errors: body.errors } : {}),
        ...(typeof body.hookMessage === 'string' ? { hookMessage: body.hookMessage } : {}),
      },
      options,
    );
  }
  // Not the service's own answer (a gateway or proxy): only the status is known.
  const transient = response.status === 502 || response.status === 503 || response.status === 504;
  return new IdentityError(
    clientProblem(
      'client.unexpected_response',
      response.status,
      `The service answered ${response.status} without Problem Details.`,
      transient,
    ),
    options,
  );
}
