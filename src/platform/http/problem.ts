import { CATALOGUE, Problem, type ValidationEntry } from '../problem.js';

/** RFC 9457 Problem Details as this service sends them (`application/problem+json`). */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  retryable: boolean;
  errors?: ValidationEntry[];
  hookMessage?: string;
  txtRecord?: { name: string; value: string };
}

/** The body of a refusal: everything but `errors` and `hookMessage` comes from the catalogue entry of its code. */
export function problemBody(problem: Problem): ProblemBody {
  const { status, title, detail, retryable } = CATALOGUE[problem.code];
  const body: ProblemBody = {
    type: `/problems/${problem.code}`,
    title,
    status,
    detail,
    code: problem.code,
    retryable,
  };
  if (problem.extra.errors) body.errors = problem.extra.errors;
  if (problem.extra.hookMessage !== undefined) body.hookMessage = problem.extra.hookMessage;
  if (problem.extra.txtRecord) body.txtRecord = problem.extra.txtRecord;
  return body;
}

/**
 * The one refusal of a missing, forged, revoked or wrong-kind session credential (docs/api.md,
 * "Sessions"), with the same header whatever the cause, so no cause is told apart by its headers.
 */
export function sessionRequired(): Problem {
  return new Problem('identity.session_required', { headers: { 'www-authenticate': 'Bearer' } });
}
