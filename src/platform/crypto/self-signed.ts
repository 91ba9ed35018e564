import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * A self-signed X.509 certificate for an RSA key of our own (SAML: the key an IdP encrypts
 * assertions to is published in our metadata as a certificate; nobody checks its chain). node:crypto
 * reads certificates but does not make them; @peculiar/x509 makes them over WebCrypto, whose key
 * generation runs off the event loop.
 */

const RSA: RsaHashedKeyGenParams = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};

export interface SelfSigned {
  /** PKCS#8 PEM. */
  privateKey: string;
  /** The certificate, PEM. */
  certificate: string;
}

/** A new RSA key (2048 bits) and its self-signed certificate, valid from `now` for `days`. */
export async function selfSignedCertificate(
  commonName: string,
  now: Date,
  days: number,
): Promise<SelfSigned> {
  const crypto = webcrypto as unknown as Crypto;
  const keys = await crypto.subtle.generateKey(RSA, true, ['sign', 'verify']);
  const serial = Buffer.from(crypto.getRandomValues(new Uint8Array(16)));
  serial[0] = (serial[0] as number) & 0x7f;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serial.toString('hex'),
      name: new x509.Name([{ CN: [commonName] }]),
      notBefore: now,
      notAfter: new Date(now.getTime() + days * 86_400_000),
      signingAlgorithm: RSA,
      keys,
    },
    crypto,
  );
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
  const body =
    pkcs8
      .toString('base64')
      .match(/.{1,64}/g)
      ?.join('\n') ?? '';
  return {
    privateKey: `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`,
    certificate: certificate.toString('pem'),
  };
}
