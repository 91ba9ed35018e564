import {
  constants,
  createCipheriv,
  publicEncrypt,
  randomBytes,
  randomUUID,
  X509Certificate,
} from 'node:crypto';
import { DOMParser, type Element, MIME_TYPE, XMLSerializer } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { selfSignedCertificate } from '../../src/platform/crypto/self-signed.js';

/**
 * A SAML identity provider made in the test: a key and its self-signed certificate, made now, and
 * responses written as XML and signed with xml-crypto. Everything a forger can change is an option,
 * so each check of the service is proven by one response that breaks it alone.
 */

const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
const ALG = {
  sha256: {
    signature: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    digest: 'http://www.w3.org/2001/04/xmlenc#sha256',
  },
  sha1: {
    signature: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1',
    digest: 'http://www.w3.org/2000/09/xmldsig#sha1',
  },
} as const;
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

export interface ResponseOptions {
  /** Our ACS and entity id, and the AuthnRequest this answers (null: unsolicited). */
  acsUrl: string;
  audience: string;
  inResponseTo: string | null;
  now: Date;
  nameId: string;
  nameIdFormat?: string;
  /** Attribute values by name; an array makes a multi-valued attribute (groups). */
  attributes?: Record<string, string | string[]>;
  destination?: string;
  recipient?: string;
  subjectInResponseTo?: string | null;
  /** Seconds from now. */
  notBefore?: number;
  notOnOrAfter?: number;
  assertionId?: string;
  issuer?: string;
  sign?: 'assertion' | 'response' | 'both' | 'none';
  algorithm?: 'sha256' | 'sha1';
  /** Signs with this key instead of the IdP's (a certificate the connection does not hold). */
  key?: string;
  /** Raw text put before the root element (a DOCTYPE). */
  prolog?: string;
}

const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

export class TestIdp {
  readonly entityId: string;
  readonly ssoUrl: string;
  readonly key: string;
  readonly certificate: string;

  private constructor(name: string, made: { privateKey: string; certificate: string }) {
    this.entityId = `https://${name}.test/saml/metadata`;
    this.ssoUrl = `https://${name}.test/saml/sso`;
    this.key = made.privateKey;
    this.certificate = made.certificate;
  }

  /** An IdP whose certificate is valid from a day before `now` for ten years. */
  static async create(now: Date, name = 'idp'): Promise<TestIdp> {
    const made = await selfSignedCertificate(`${name} test IdP`, new Date(now.getTime() - 86_400_000), 3650);
    return new TestIdp(name, made);
  }

  get certificateBase64(): string {
    return this.certificate.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
  }

  metadata(): string {
    return `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${this.entityId}">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${this.certificateBase64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${this.ssoUrl}/post"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${this.ssoUrl}"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;
  }

  /** The unsigned Response XML. */
  unsigned(o: ResponseOptions): string {
    const at = (s: number) => iso(new Date(o.now.getTime() + s * 1000));
    const irt = o.inResponseTo === null ? '' : ` InResponseTo="${o.inResponseTo}"`;
    const subjectIrt = o.subjectInResponseTo === undefined ? o.inResponseTo : o.subjectInResponseTo;
    const scdIrt = subjectIrt === null ? '' : ` InResponseTo="${subjectIrt}"`;
    const issuer = o.issuer ?? this.entityId;
    const attributes = Object.entries(o.attributes ?? {})
      .map(
        ([name, value]) =>
          `<saml:Attribute Name="${esc(name)}">${[value]
            .flat()
            .map((v) => `<saml:AttributeValue>${esc(v)}</saml:AttributeValue>`)
            .join('')}</saml:Attribute>`,
      )
      .join('');
    const assertionId = o.assertionId ?? `_a${randomUUID().replace(/-/g, '')}`;
    return `${o.prolog ?? ''}<samlp:Response xmlns:samlp="${SAMLP}" xmlns:saml="${SAML}" ID="_r${randomUUID().replace(/-/g, '')}" Version="2.0" IssueInstant="${at(0)}" Destination="${o.destination ?? o.acsUrl}"${irt}><saml:Issuer>${issuer}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status><saml:Assertion ID="${assertionId}" Version="2.0" IssueInstant="${at(0)}"><saml:Issuer>${issuer}</saml:Issuer><saml:Subject><saml:NameID Format="${o.nameIdFormat ?? 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'}">${o.nameId}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData${scdIrt} NotOnOrAfter="${at(o.notOnOrAfter ?? 300)}" Recipient="${o.recipient ?? o.acsUrl}"/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="${at(o.notBefore ?? -5)}" NotOnOrAfter="${at(o.notOnOrAfter ?? 300)}"><saml:AudienceRestriction><saml:Audience>${o.audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="${at(0)}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>${attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : ''}</saml:Assertion></samlp:Response>`;
  }

  /** The Response XML, signed as asked (the assertion by default). */
  xml(o: ResponseOptions): string {
    let xml = this.unsigned(o);
    const sign = o.sign ?? 'assertion';
    const key = o.key ?? this.key;
    const alg = o.algorithm ?? 'sha256';
    if (sign === 'assertion' || sign === 'both') xml = signElement(xml, 'Assertion', key, alg);
    if (sign === 'response' || sign === 'both') xml = signElement(xml, 'Response', key, alg);
    return xml;
  }

  /** The SAMLResponse form value. */
  response(o: ResponseOptions): string {
    return b64(this.xml(o));
  }
}

export const b64 = (xml: string) => Buffer.from(xml, 'utf8').toString('base64');

/** Signs the element (`Response`: the root; `Assertion`: the assertion), the signature after its Issuer. */
export function signElement(
  xml: string,
  element: 'Response' | 'Assertion',
  key: string,
  alg: 'sha256' | 'sha1' = 'sha256',
) {
  const path = element === 'Response' ? "/*[local-name(.)='Response']" : "//*[local-name(.)='Assertion']";
  const sig = new SignedXml({
    privateKey: key,
    signatureAlgorithm: ALG[alg].signature,
    canonicalizationAlgorithm: EXC_C14N,
  });
  sig.addReference({ xpath: path, transforms: [ENVELOPED, EXC_C14N], digestAlgorithm: ALG[alg].digest });
  sig.computeSignature(xml, {
    location: { reference: `${path}/*[local-name(.)='Issuer']`, action: 'after' },
  });
  return sig.getSignedXml();
}

/** DOM helpers for the wrapping attacks. */
export function parse(xml: string) {
  return new DOMParser().parseFromString(xml, MIME_TYPE.XML_TEXT);
}
export function serialise(node: unknown): string {
  return new XMLSerializer().serializeToString(node as never);
}
export function child(parent: Element, local: string): Element {
  const found = Array.from(parent.childNodes).find((n) => (n as Element).localName === local) as
    | Element
    | undefined;
  if (!found) throw new Error(`no ${local}`);
  return found;
}

export const XMLENC = {
  aes256cbc: 'http://www.w3.org/2001/04/xmlenc#aes256-cbc',
  aes256gcm: 'http://www.w3.org/2009/xmlenc11#aes256-gcm',
  oaep: 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
  rsa15: 'http://www.w3.org/2001/04/xmlenc#rsa-1_5',
} as const;

/**
 * The Response with its (already signed, or not) Assertion replaced by an EncryptedAssertion to
 * `certificate` (base64 DER or PEM), as an IdP does with the SP's encryption certificate. Written
 * here with node:crypto and XML Encryption's shapes (W3C xmlenc-core1: the IV before the cipher
 * text, GCM's tag after it), independent of the library that decrypts it.
 */
export function encryptAssertion(
  xml: string,
  certificate: string,
  o: { data?: (typeof XMLENC)['aes256gcm' | 'aes256cbc']; key?: (typeof XMLENC)['oaep' | 'rsa15'] } = {},
): string {
  const base64 = certificate.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
  const publicKey = new X509Certificate(Buffer.from(base64, 'base64')).publicKey;
  const start = xml.indexOf('<saml:Assertion');
  const end = xml.indexOf('</saml:Assertion>') + '</saml:Assertion>'.length;
  if (start < 0 || end < start) throw new Error('no assertion');
  // The assertion as a document of its own: its prefix declared on it.
  const assertion = Buffer.from(
    xml.slice(start, end).replace('<saml:Assertion', `<saml:Assertion xmlns:saml="${SAML}"`),
    'utf8',
  );
  const data = o.data ?? XMLENC.aes256gcm;
  const key = randomBytes(32);
  let content: Buffer;
  if (data === XMLENC.aes256gcm) {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update(assertion), cipher.final()]);
    content = Buffer.concat([iv, body, cipher.getAuthTag()]);
  } else {
    const iv = randomBytes(16);
    const cipher = createCipheriv('aes-256-cbc', key, iv);
    content = Buffer.concat([iv, cipher.update(assertion), cipher.final()]);
  }
  const transport = o.key ?? XMLENC.oaep;
  const wrapped = publicEncrypt(
    transport === XMLENC.oaep
      ? { key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' }
      : { key: publicKey, padding: constants.RSA_PKCS1_PADDING },
    key,
  );
  const oaepDigest =
    transport === XMLENC.oaep ? '<ds:DigestMethod Algorithm="http://www.w3.org/2000/09/xmldsig#sha1"/>' : '';
  const encrypted = `<xenc:EncryptedData xmlns:xenc="http://www.w3.org/2001/04/xmlenc#" Type="http://www.w3.org/2001/04/xmlenc#Element"><xenc:EncryptionMethod Algorithm="${data}"/><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><xenc:EncryptedKey><xenc:EncryptionMethod Algorithm="${transport}">${oaepDigest}</xenc:EncryptionMethod><xenc:CipherData><xenc:CipherValue>${wrapped.toString('base64')}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedKey></ds:KeyInfo><xenc:CipherData><xenc:CipherValue>${content.toString('base64')}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedData>`;
  return `${xml.slice(0, start)}<saml:EncryptedAssertion>${encrypted}</saml:EncryptedAssertion>${xml.slice(end)}`;
}
