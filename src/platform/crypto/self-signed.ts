import { createSign, generateKeyPairSync, randomBytes } from 'node:crypto';

/**
 * A self-signed X.509 certificate for an RSA key of our own (SAML: the key an IdP encrypts
 * assertions to is published in our metadata as a certificate; nobody checks its chain). node:crypto
 * reads certificates but does not make them, and this is the one certificate the service makes: a
 * few lines of DER (ITU-T X.690) rather than a dependency.
 */

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

const sequence = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280, 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${iso}Z`));
}

function name(commonName: string): Buffer {
  return sequence(tlv(0x31, sequence(oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
}

const SHA256_WITH_RSA = sequence(oid('1.2.840.113549.1.1.11'), Buffer.from([0x05, 0x00]));

export interface SelfSigned {
  /** PKCS#8 PEM. */
  privateKey: string;
  /** The certificate, PEM. */
  certificate: string;
}

/** A new RSA key (2048 bits) and its self-signed certificate, valid from `now` for `days`. */
export function selfSignedCertificate(commonName: string, now: Date, days: number): SelfSigned {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const serial = randomBytes(16);
  serial[0] = (serial[0] as number) & 0x7f;
  const tbs = sequence(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    SHA256_WITH_RSA,
    name(commonName),
    sequence(time(now), time(new Date(now.getTime() + days * 86_400_000))),
    name(commonName),
    publicKey.export({ type: 'spki', format: 'der' }),
  );
  const signature = createSign('sha256').update(tbs).sign(privateKey);
  const der = sequence(tbs, SHA256_WITH_RSA, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const body =
    der
      .toString('base64')
      .match(/.{1,64}/g)
      ?.join('\n') ?? '';
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certificate: `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`,
  };
}
