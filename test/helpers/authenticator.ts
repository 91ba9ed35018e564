import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isoBase64URL, isoCBOR } from '@simplewebauthn/server/helpers';

/**
 * A software WebAuthn authenticator for server-side tests: a P-256 key we hold, answering
 * `navigator.credentials.create` and `get` the way a browser and a platform authenticator would,
 * as the standard JSON (RegistrationResponseJSON, AuthenticationResponseJSON). Every field can be
 * bent to make the refusals the service must give (wrong origin, RP ID, user verification, a
 * counter that goes backwards, a signature over something else).
 */
export interface Bend {
  origin?: string;
  rpId?: string;
  /** The challenge signed over, instead of the one given. */
  challenge?: string;
  /** User verification flag (default on). */
  userVerified?: boolean;
  /** The counter to report (default: one more than last time). */
  counter?: number;
  /** clientDataJSON.type (default webauthn.create / webauthn.get). */
  type?: string;
  /** Signs with another key than the credential's. */
  wrongKey?: boolean;
  /** Reports this credential id instead of the authenticator's own. */
  credentialId?: string;
}

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_BE = 0x08;
const FLAG_BS = 0x10;
const FLAG_AT = 0x40;

function sha256(data: Uint8Array | string): Buffer {
  return createHash('sha256').update(data).digest();
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** The COSE_Key (EC2, P-256, ES256) of a public key. */
function coseKey(publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: 'jwk' });
  return isoCBOR.encode(
    new Map<number, number | Uint8Array>([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, new Uint8Array(Buffer.from(jwk.x as string, 'base64url'))],
      [-3, new Uint8Array(Buffer.from(jwk.y as string, 'base64url'))],
    ]),
  );
}

export class SoftAuthenticator {
  readonly credentialId = isoBase64URL.fromBuffer(new Uint8Array(randomBytes(32)));
  readonly aaguid = Buffer.alloc(16);
  readonly #keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  #counter = 0;
  /** The user handle registration gave (returned on discoverable sign-ins). */
  userHandle: string | undefined;

  constructor(
    readonly origin: string,
    readonly rpId: string,
    /** Backup eligible (a synced passkey): its counter may stay at zero or go back. */
    readonly backupEligible = false,
  ) {}

  private flags(bend: Bend, attested: boolean): number {
    let f = FLAG_UP;
    if (bend.userVerified ?? true) f |= FLAG_UV;
    if (this.backupEligible) f |= FLAG_BE | FLAG_BS;
    if (attested) f |= FLAG_AT;
    return f;
  }

  private clientData(type: string, challenge: string, bend: Bend): Buffer {
    return Buffer.from(
      JSON.stringify({
        type: bend.type ?? type,
        challenge: bend.challenge ?? challenge,
        origin: bend.origin ?? this.origin,
        crossOrigin: false,
      }),
    );
  }

  /** navigator.credentials.create with the service's creation options. */
  create(options: { challenge: string; user: { id: string } }, bend: Bend = {}) {
    this.userHandle = options.user.id;
    const counter = bend.counter ?? this.#counter;
    const credentialIdBytes = Buffer.from(this.credentialId, 'base64url');
    const authData = Buffer.concat([
      sha256(bend.rpId ?? this.rpId),
      Buffer.from([this.flags(bend, true)]),
      u32(counter),
      this.aaguid,
      Buffer.from([credentialIdBytes.length >> 8, credentialIdBytes.length & 0xff]),
      credentialIdBytes,
      Buffer.from(coseKey(this.#keys.publicKey)),
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Map<string, string> | Uint8Array>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, string>()],
        ['authData', new Uint8Array(authData)],
      ]),
    );
    const clientDataJSON = this.clientData('webauthn.create', options.challenge, bend);
    return this.credential(bend, {
      clientDataJSON: clientDataJSON.toString('base64url'),
      attestationObject: Buffer.from(attestationObject).toString('base64url'),
      transports: ['internal'],
    });
  }

  /** navigator.credentials.get with the service's request options. */
  get(options: { challenge: string }, bend: Bend = {}) {
    this.#counter = bend.counter ?? this.#counter + 1;
    const authData = Buffer.concat([
      sha256(bend.rpId ?? this.rpId),
      Buffer.from([this.flags(bend, false)]),
      u32(this.#counter),
    ]);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge, bend);
    const key = bend.wrongKey
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
      : this.#keys.privateKey;
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), key);
    return this.credential(bend, {
      clientDataJSON: clientDataJSON.toString('base64url'),
      authenticatorData: authData.toString('base64url'),
      signature: signature.toString('base64url'),
      userHandle: this.userHandle,
    });
  }

  /** The PublicKeyCredential JSON around an authenticator response. */
  private credential<R>(bend: Bend, response: R) {
    const id = bend.credentialId ?? this.credentialId;
    return {
      id,
      rawId: id,
      type: 'public-key',
      response,
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
