import { randomUUID } from 'node:crypto';
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { decodeClientDataJSON } from '@simplewebauthn/server/helpers';
import type { Config, WebAuthnConfig } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import { sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { SessionPrincipal } from '../../platform/http/auth.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import { Problem, type ProblemCode } from '../../platform/problem.js';
import type { GuessBudgets } from '../../platform/rate-limit/guess-budget.js';
import { guessSubject } from '../../platform/rate-limit/guess-budget.js';
import type { EventLog } from '../events/log.js';
import { verifiedIdentifiers } from '../identities/repository.js';
import { type Elevation, type MintElevationDeps, mintElevation } from '../step-up/service.js';
import { passkeyChanged } from './events.js';
import {
  insertChallenge,
  insertPasskey,
  livePasskeys,
  type PasskeyRow,
  passkeyByCredential,
  pruneExpiredChallenges,
  recordUse,
  spendChallenge,
  type WebAuthnPurpose,
} from './repository.js';

/** A challenge lives five minutes, the time a person takes to find and unlock an authenticator. */
const CHALLENGE_TTL_SECONDS = 300;
/** ES256, EdDSA, RS256 (COSE algorithm ids), in order of preference. */
const ALGORITHMS = [-7, -8, -257];

export interface Options<T> {
  options: T;
  expiresAt: string;
}

/** What passkey registration and assertion use. */
export interface PasskeyServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  config: Pick<Config, 'webauthn'>;
  /** identity.passkey.added (docs/events.md; a removal is a sign-in method's). */
  events: EventLog;
}

/**
 * WebAuthn through @simplewebauthn/server: creation and request options, attestation and
 * assertion verification. Challenges are stored as their SHA-256 and spent by compare-and-set in
 * the transaction of the act they allow (registering, opening a session, minting an elevation).
 */
export class PasskeyService {
  readonly #rp: WebAuthnConfig;

  constructor(private readonly deps: PasskeyServiceDeps) {
    if (!deps.config.webauthn) throw new Error('passkeys are off: no WebAuthn relying party is configured');
    this.#rp = deps.config.webauthn;
  }

  private async issue(
    purpose: WebAuthnPurpose,
    challenge: string,
    sessionId: string | null,
  ): Promise<string> {
    const now = this.deps.clock.now();
    const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_SECONDS * 1000);
    await this.deps.database.db.transaction().execute(async (trx) => {
      await pruneExpiredChallenges(trx, now);
      await insertChallenge(trx, {
        id: randomUUID(),
        purpose,
        hash: sha256Hex(challenge),
        sessionId,
        now,
        expiresAt,
      });
    });
    return expiresAt.toISOString();
  }

  /** POST /passkeys/options: creation options for the caller's identity, bound to its session. */
  async registrationOptions(
    principal: SessionPrincipal,
  ): Promise<Options<PublicKeyCredentialCreationOptionsJSON>> {
    const { db } = this.deps.database;
    const [existing, identifiers] = await Promise.all([
      livePasskeys(db, principal.identityId),
      verifiedIdentifiers(db, principal.identityId),
    ]);
    // What the authenticator shows the person to tell their accounts apart: their first address,
    // masked like every identifier the service answers with (it would otherwise be echoed to any
    // holder of a stolen elevated session).
    const first = identifiers[0];
    const name = first ? maskIdentifier(first.type, first.value) : 'account';
    const options = await generateRegistrationOptions({
      rpName: this.#rp.rpName,
      rpID: this.#rp.rpId,
      // The user handle is the identity id (opaque, never an address): a discoverable sign-in
      // returns it, and it must name the passkey's own identity.
      userID: new Uint8Array(userHandleBytes(principal.identityId)),
      userName: name,
      userDisplayName: name,
      timeout: CHALLENGE_TTL_SECONDS * 1000,
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({
        id: p.credentialId,
        // biome-ignore lint/suspicious/noExplicitAny: stored as the browser reported them
        transports: p.transports as any,
      })),
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
      supportedAlgorithmIDs: ALGORITHMS,
    });
    const expiresAt = await this.issue('registration', options.challenge, principal.sessionId);
    return { options, expiresAt };
  }

  /**
   * POST /passkeys: verifies the attestation against a live registration challenge of the
   * caller's session, then spends the challenge and stores the passkey in one transaction. Every
   * failure is 422 identity.sign_in_method_confirmation_refused; a credential already registered
   * (to anyone) is 409 identity.identifier_taken.
   */
  async register(
    principal: SessionPrincipal,
    input: { credential: RegistrationResponseJSON; label?: string },
  ): Promise<{ id: string }> {
    const refusal = () => new Problem('identity.sign_in_method_confirmation_refused');
    const challenge = challengeOf(input.credential.response.clientDataJSON);
    if (!challenge) throw refusal();
    let info: Awaited<ReturnType<typeof verifyRegistrationResponse>>['registrationInfo'];
    try {
      const result = await verifyRegistrationResponse({
        response: input.credential,
        expectedChallenge: challenge,
        expectedOrigin: this.#rp.origins,
        expectedRPID: this.#rp.rpId,
        requireUserVerification: true,
        supportedAlgorithmIDs: ALGORITHMS,
      });
      info = result.verified ? result.registrationInfo : undefined;
    } catch {
      info = undefined;
    }
    if (!info) throw refusal();
    const verified = info;
    const now = this.deps.clock.now();
    const outcome = await this.deps.database.db.transaction().execute(async (trx) => {
      const spent = await spendChallenge(trx, {
        hash: sha256Hex(challenge),
        purpose: 'registration',
        sessionId: principal.sessionId,
        now,
      });
      if (!spent) return 'refused' as const;
      const id = randomUUID();
      const stored = await insertPasskey(trx, {
        id,
        identityId: principal.identityId,
        credentialId: verified.credential.id,
        publicKey: verified.credential.publicKey,
        signCount: verified.credential.counter,
        transports: verified.credential.transports ?? [],
        backupEligible: verified.credentialDeviceType === 'multiDevice',
        backedUp: verified.credentialBackedUp,
        aaguid: verified.aaguid,
        label: input.label ?? null,
        now,
      });
      if (!stored) return 'taken' as const;
      await passkeyChanged(this.deps.events, trx, 'identity.passkey.added', principal.identityId, id);
      await this.deps.audit.appendOwn(trx, 'identity.sign_in_method.verified', principal.identityId, {
        kind: 'passkey',
        methodId: id,
      });
      return { id };
    });
    if (outcome === 'refused') throw refusal();
    if (outcome === 'taken') throw new Problem('identity.identifier_taken');
    return outcome;
  }

  /**
   * Request options for a sign-in (no session: discoverable credentials, so the answer names no
   * credential and is the same whoever asks) or a step-up (the caller's passkeys, bound to its
   * session).
   */
  async requestOptions(
    purpose: 'sign_in' | 'step_up',
    principal?: SessionPrincipal,
  ): Promise<Options<PublicKeyCredentialRequestOptionsJSON>> {
    const mine = principal ? await livePasskeys(this.deps.database.db, principal.identityId) : [];
    const options = await generateAuthenticationOptions({
      rpID: this.#rp.rpId,
      timeout: CHALLENGE_TTL_SECONDS * 1000,
      userVerification: 'required',
      allowCredentials: mine.map((p) => ({
        id: p.credentialId,
        // biome-ignore lint/suspicious/noExplicitAny: stored as the browser reported them
        transports: p.transports as any,
      })),
    });
    const expiresAt = await this.issue(purpose, options.challenge, principal?.sessionId ?? null);
    return { options, expiresAt };
  }

  /**
   * Verifies an assertion and, in one transaction, spends its challenge (purpose and session must
   * match), records the use, and runs `act` (opening a session, minting an elevation). Every
   * failure is the same `refusal`: an unknown or removed credential, a bad signature, another
   * origin or RP ID, no user verification, an unknown, expired, spent or foreign challenge, a user
   * handle that is not the passkey's identity, and a counter that went backwards on a credential
   * that is not backup-eligible. `refused` learns of a refusal only once the assertion's signature
   * verified under the passkey's key (a removed passkey, a regressed counter): the owner's
   * authenticator, or a copy of it, really signed. A credential id is not a secret, so
   * an assertion that does not verify is refused without touching the owner's records.
   */
  async assert<T>(
    purpose: 'sign_in' | 'step_up',
    credential: AuthenticationResponseJSON,
    refusal: ProblemCode,
    bound: { sessionId: string | null; identityId?: string },
    act: (trx: Executor, passkey: PasskeyRow) => Promise<T>,
    refused?: (passkey: PasskeyRow, reason: 'removed' | 'counter') => Promise<void>,
    /** Run once the signature verified, before the challenge's transaction (a sign-in's hook). */
    verified?: (passkey: PasskeyRow) => Promise<void>,
  ): Promise<T> {
    const refuse = () => new Problem(refusal);
    const challenge = challengeOf(credential.response.clientDataJSON);
    if (!challenge) throw refuse();
    const passkey = await passkeyByCredential(this.deps.database.db, credential.id);
    if (!passkey) throw refuse();
    if (bound.identityId && passkey.identityId !== bound.identityId) throw refuse();
    const handle = credential.response.userHandle;
    // A sign-in names no user (discoverable credentials), so the authenticator must say whose
    // passkey answered (WebAuthn Level 3, 7.2 step 6): no user handle is a failure like any other.
    // A step-up names the caller's passkeys, where the handle may be absent but never another's.
    if (purpose === 'sign_in' && (handle === undefined || handle === null || handle === '')) throw refuse();
    if (handle !== undefined && handle !== null && handle !== userHandleOf(passkey.identityId))
      throw refuse();
    let result: Awaited<ReturnType<typeof verifyAuthenticationResponse>> | undefined;
    try {
      result = await verifyAuthenticationResponse({
        response: credential,
        expectedChallenge: challenge,
        expectedOrigin: this.#rp.origins,
        expectedRPID: this.#rp.rpId,
        requireUserVerification: true,
        credential: {
          id: passkey.credentialId,
          publicKey: new Uint8Array(passkey.publicKey),
          // The counter is judged where the use is recorded (recordUse): a backup-eligible
          // passkey's may stay or go back.
          counter: 0,
        },
      });
    } catch {
      result = undefined;
    }
    // Only a signature the passkey's key made reaches `refused`: what anyone holding a credential id
    // can send (a forged or unsigned assertion) never writes to the owner's records.
    if (!result?.verified) throw refuse();
    if (passkey.removedAt) {
      await refused?.(passkey, 'removed');
      throw refuse();
    }
    await verified?.(passkey);
    const { newCounter, credentialBackedUp } = result.authenticationInfo;
    const now = this.deps.clock.now();
    // The challenge is spent first: of assertions racing over one challenge, the losers are
    // refused for the challenge, never mistaken for a cloned authenticator. The counter is then
    // judged in the statement that records the use (recordUse); a failure there keeps the
    // challenge spent and is recorded.
    const done = await this.deps.database.db.transaction().execute(async (trx) => {
      const spent = await spendChallenge(trx, {
        hash: sha256Hex(challenge),
        purpose,
        sessionId: bound.sessionId,
        now,
      });
      // A spent challenge is most often the owner's own double submit: refused, not recorded.
      if (!spent) return { ok: false as const, refused: undefined };
      const used = await recordUse(trx, {
        id: passkey.id,
        signCount: newCounter,
        backedUp: credentialBackedUp,
        now,
      });
      if (!used) {
        const current = await passkeyByCredential(trx, passkey.credentialId);
        return {
          ok: false as const,
          refused:
            current?.id === passkey.id && !current.removedAt ? ('counter' as const) : ('removed' as const),
        };
      }
      return { ok: true as const, value: await act(trx, passkey) };
    });
    if (!done.ok) {
      if (done.refused) await refused?.(passkey, done.refused);
      throw refuse();
    }
    return done.value;
  }
}

/** What the passkey step-up uses (the sign-in: sign-in/strategies/passkey.ts). */
export interface PasskeyStepUpDeps extends MintElevationDeps {
  guesses: GuessBudgets;
}

/** The passkey step-up: an assertion by one of the caller's passkeys mints an elevation. */
export class PasskeyStepUp {
  constructor(
    private readonly deps: PasskeyStepUpDeps,
    private readonly passkeys: PasskeyService,
  ) {}

  /** POST /step-ups/passkeys: an assertion by one of the caller's own passkeys mints the elevation. */
  async stepUp(principal: SessionPrincipal, credential: AuthenticationResponseJSON): Promise<Elevation> {
    await this.deps.guesses.admit(guessSubject.session(principal.identityId));
    return this.passkeys.assert(
      'step_up',
      credential,
      'identity.step_up_confirmation_refused',
      { sessionId: principal.sessionId, identityId: principal.identityId },
      async (trx) => {
        await this.deps.guesses.forgive(trx, guessSubject.session(principal.identityId));
        return mintElevation(trx, this.deps, principal, 'passkey');
      },
    );
  }
}

/** The WebAuthn user handle of an identity: its id's 16 bytes, base64url (as browsers return it). */
function userHandleOf(identityId: string): string {
  return userHandleBytes(identityId).toString('base64url');
}

/** The 16 bytes of an identity id: the user handle given at registration. */
function userHandleBytes(identityId: string): Buffer {
  return Buffer.from(identityId.replaceAll('-', ''), 'hex');
}

/** The challenge a client signed over, from its clientDataJSON; undefined when that is malformed. */
function challengeOf(clientDataJSON: string): string | undefined {
  try {
    const challenge = decodeClientDataJSON(clientDataJSON).challenge;
    return typeof challenge === 'string' && challenge.length > 0 && challenge.length <= 128
      ? challenge
      : undefined;
  } catch {
    return undefined;
  }
}
