import { type CacheProvider, SAML, ValidateInResponseTo } from '@node-saml/node-saml';
// node-saml's own decryption (xml-encryption), so we read exactly what the library will verify.
import { decryptXml } from '@node-saml/node-saml/lib/xml.js';
import type { Element } from '@xmldom/xmldom';
import { parseXmlStrict } from '../organizations/connections/metadata.js';

/**
 * Our SAML 2.0 service provider's use of @node-saml/node-saml (docs/sso.md, "Checks"). The library
 * checks the XML signatures (Response or Assertion, against the connection's certificates, with
 * the 2025 wrapping fixes), the audience and the InResponseTo it is handed. What node-saml 5.1.0
 * leaves open is checked here, each with its test (test/sso/saml.test.ts):
 *  - a document type declaration, used or not, is refused before anything reads the document;
 *  - the Response's Destination and the bearer SubjectConfirmationData's Recipient must be our ACS;
 *  - every signature and digest algorithm in the document is SHA-256 or stronger (no SHA-1);
 *  - InResponseTo must be the AuthnRequest of the flow started in this browser (the caller hands
 *    it in, found through the flow's cookie), and validated by the library as well ('always');
 *  - NotBefore / NotOnOrAfter of the Conditions and of the SubjectConfirmationData against our
 *    injected clock with a stated skew (the library's own time checks use Date and are off);
 *  - an EncryptedAssertion is decrypted here too (with the connection's key; none: refused) so the
 *    algorithm checks above also cover the signature inside it, which the library would accept in
 *    SHA-1; key transport RSA-OAEP only (RSA 1.5 refused), content AES-CBC or AES-GCM;
 *  - the NameID read with its comments (CVE-2017-11427 class): a NameID whose text the library
 *    would read differently from the whole text is refused, never truncated.
 * Every refusal is one SamlRefused: what the IdP did wrong is never told to the browser.
 */

export class SamlRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
const SAML_NS = 'urn:oasis:names:tc:SAML:2.0:assertion';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

/** RSA-SHA256 or stronger (XML Signature 1.1 and RFC 6931 names); RSA-SHA1 and DSA are not here. */
const SIGNATURE_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
]);
const DIGEST_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmlenc#sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512',
]);

const XENC = 'http://www.w3.org/2001/04/xmlenc#';
/** Key transport and content encryption of an EncryptedAssertion: no RSA 1.5, no triple DES. */
const ENCRYPTION_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
  'http://www.w3.org/2009/xmlenc11#rsa-oaep',
  'http://www.w3.org/2001/04/xmlenc#aes128-cbc',
  'http://www.w3.org/2001/04/xmlenc#aes256-cbc',
  'http://www.w3.org/2009/xmlenc11#aes128-gcm',
  'http://www.w3.org/2009/xmlenc11#aes256-gcm',
]);

/**
 * Every signature and reference digest algorithm under `root` is SHA-256 or stronger. Only the
 * DigestMethod of a signature's Reference counts: RSA-OAEP's own DigestMethod (inside an
 * EncryptedKey) names the OAEP hash, not a signature's.
 */
function signatureAlgorithmsRefusal(root: Element): string | null {
  for (const method of elements(root, DS, 'SignatureMethod'))
    if (!SIGNATURE_ALGORITHMS.has(method.getAttribute('Algorithm') ?? '')) return 'signature algorithm';
  for (const method of elements(root, DS, 'DigestMethod')) {
    const parent = method.parentNode as Element | null;
    if (parent?.namespaceURI !== DS || parent.localName !== 'Reference') continue;
    if (!DIGEST_ALGORITHMS.has(method.getAttribute('Algorithm') ?? '')) return 'digest algorithm';
  }
  return null;
}

/** What a connection gives the checks. */
export interface SamlParty {
  /** Our SP entity id for the connection (the audience). */
  spEntityId: string;
  acsUrl: string;
  idpEntityId: string;
  ssoUrl: string;
  /** base64 DER. */
  certificates: string[];
  /** Our decryption key (PKCS#8 PEM), when assertions come encrypted. */
  decryptionKey?: string;
}

/** What a checked assertion says. */
export interface SamlAssertion {
  assertionId: string;
  nameId: string;
  nameIdFormat: string | null;
  attributes: Record<string, string[]>;
  /** Until when the assertion could be accepted at all (its NotOnOrAfter): the replay row's life. */
  usableUntil: Date;
}

/** A cache of exactly the one request id the flow found through the browser's cookie (or none). */
function flowCache(expected: string | null, createdAt: Date): CacheProvider {
  return {
    saveAsync: async () => null,
    getAsync: async (key) => (expected !== null && key === expected ? createdAt.toISOString() : null),
    removeAsync: async () => null,
  };
}

function samlFor(
  party: SamlParty,
  expectedRequestId: string | null,
  flowCreatedAt: Date,
  requestId?: string,
) {
  return new SAML({
    callbackUrl: party.acsUrl,
    entryPoint: party.ssoUrl,
    issuer: party.spEntityId,
    audience: party.spEntityId,
    idpIssuer: party.idpEntityId,
    idpCert: party.certificates,
    // At least one signature, over the assertion used: with both false the library takes a
    // valid Response signature (and the assertion inside what it covers), else demands a valid
    // Assertion signature (saml.js validatePostResponseAsync). Most IdPs sign one of the two.
    wantAuthnResponseSigned: false,
    wantAssertionsSigned: false,
    validateInResponseTo:
      expectedRequestId === null ? ValidateInResponseTo.never : ValidateInResponseTo.always,
    cacheProvider: flowCache(expectedRequestId, flowCreatedAt),
    // The flow's own expiry (and our clock) decides; the library compares with Date.now().
    requestIdExpirationPeriodMs: Number.MAX_SAFE_INTEGER / 2,
    // -1: the library's time checks (on Date.now()) are off; ours run on the injected clock.
    acceptedClockSkewMs: -1,
    decryptionPvk: party.decryptionKey,
    identifierFormat: null,
    disableRequestedAuthnContext: true,
    signatureAlgorithm: 'sha256',
    ...(requestId ? { generateUniqueId: () => requestId } : {}),
  });
}

/** The HTTP-Redirect URL of our AuthnRequest whose ID is `requestId`. */
export function authnRequestUrl(party: SamlParty, requestId: string, relayState: string): Promise<string> {
  return samlFor(party, null, new Date(0), requestId).getAuthorizeUrlAsync(relayState, undefined, {});
}

/** Our SP metadata for the connection (entity id, ACS; our encryption certificate when there is one). */
export function spMetadata(party: SamlParty, encryptionCertificate: string | null): string {
  const cert = encryptionCertificate
    ? `-----BEGIN CERTIFICATE-----\n${encryptionCertificate}\n-----END CERTIFICATE-----`
    : null;
  return samlFor(party, null, new Date(0)).generateServiceProviderMetadata(cert, null);
}

const elements = (parent: Element, ns: string, local: string): Element[] =>
  Array.from(parent.getElementsByTagNameNS(ns, local));

const directChildren = (parent: Element, ns: string, local: string): Element[] =>
  Array.from(parent.childNodes).filter(
    (n): n is Element =>
      n.nodeType === 1 && (n as Element).namespaceURI === ns && (n as Element).localName === local,
  );

function instant(value: string | null): number | null {
  if (value === null) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? Number.NaN : ms;
}

/** NotBefore ≤ now + skew and now - skew < NotOnOrAfter (SAML core 2.5.1.2). */
function within(now: number, skewMs: number, notBefore: number | null, notOnOrAfter: number | null): boolean {
  if (Number.isNaN(notBefore) || Number.isNaN(notOnOrAfter)) return false;
  if (notBefore !== null && now + skewMs < notBefore) return false;
  if (notOnOrAfter !== null && now - skewMs >= notOnOrAfter) return false;
  return true;
}

/** The Response's InResponseTo, read before any check (it names the flow to look up); null when absent. */
export function inResponseToOf(samlResponse: string): string | null | 'malformed' {
  const doc = parseXmlStrict(decode(samlResponse));
  const root = doc?.documentElement;
  if (!root || root.namespaceURI !== SAMLP || root.localName !== 'Response') return 'malformed';
  const value = root.getAttribute('InResponseTo');
  return value === null || value === '' ? null : value;
}

function decode(samlResponse: string): string {
  return Buffer.from(samlResponse, 'base64').toString('utf8');
}

/**
 * The assertion of `samlResponse` (base64, from the ACS form), checked. `expectedRequestId` is
 * the AuthnRequest ID of the flow started in this browser, or null for an IdP-initiated answer
 * (which must then carry no InResponseTo at all).
 */
export async function checkResponse(
  party: SamlParty,
  samlResponse: string,
  expected: { requestId: string; createdAt: Date } | null,
  now: Date,
  skewSeconds: number,
): Promise<SamlAssertion> {
  const refuse = (reason: string): never => {
    throw new SamlRefused(reason);
  };
  const xml = decode(samlResponse);
  const doc = parseXmlStrict(xml);
  const root = doc?.documentElement;
  if (!doc || !root) return refuse('malformed or DOCTYPE');
  if (root.namespaceURI !== SAMLP || root.localName !== 'Response') refuse('not a Response');
  if (root.getAttribute('Destination') !== party.acsUrl) refuse('Destination');
  const inResponseTo = root.getAttribute('InResponseTo') || null;
  if (expected === null ? inResponseTo !== null : inResponseTo !== expected.requestId) refuse('InResponseTo');
  const algorithms = signatureAlgorithmsRefusal(root);
  if (algorithms) refuse(algorithms);
  const encrypted = directChildren(root, SAML_NS, 'EncryptedAssertion');
  if (encrypted.length > 0) {
    if (!party.decryptionKey) refuse('encrypted, no decryption key');
    if (encrypted.length > 1) refuse('several assertions');
    for (const method of elements(root, XENC, 'EncryptionMethod'))
      if (!ENCRYPTION_ALGORITHMS.has(method.getAttribute('Algorithm') ?? '')) refuse('encryption algorithm');
    let decrypted: string;
    try {
      decrypted = await decryptXml((encrypted[0] as Element).toString(), party.decryptionKey as string);
    } catch {
      return refuse('decryption');
    }
    const inner = parseXmlStrict(decrypted)?.documentElement;
    if (!inner) return refuse('decrypted malformed or DOCTYPE');
    const innerAlgorithms = signatureAlgorithmsRefusal(inner);
    if (innerAlgorithms) refuse(`encrypted ${innerAlgorithms}`);
  }

  let profile: Awaited<ReturnType<SAML['validatePostResponseAsync']>>['profile'];
  try {
    ({ profile } = await samlFor(
      party,
      expected?.requestId ?? null,
      expected?.createdAt ?? now,
    ).validatePostResponseAsync({
      SAMLResponse: samlResponse,
    }));
  } catch {
    return refuse('library');
  }
  if (!profile?.getAssertionXml) return refuse('no assertion');

  // From here on, only the assertion the library verified is read.
  const assertionDoc = parseXmlStrict(profile.getAssertionXml());
  const assertion = assertionDoc?.documentElement;
  if (!assertion || assertion.namespaceURI !== SAML_NS || assertion.localName !== 'Assertion')
    return refuse('verified assertion');
  const assertionId = assertion.getAttribute('ID') ?? '';
  if (assertionId.length === 0 || assertionId.length > 256) refuse('assertion ID');
  const [issuer] = directChildren(assertion, SAML_NS, 'Issuer');
  if (issuer?.textContent?.trim() !== party.idpEntityId) refuse('Issuer');

  const nowMs = now.getTime();
  const skewMs = skewSeconds * 1000;
  const conditions = directChildren(assertion, SAML_NS, 'Conditions');
  if (conditions.length !== 1) refuse('Conditions');
  const condition = conditions[0] as Element;
  const notOnOrAfter = instant(condition.getAttribute('NotOnOrAfter'));
  if (notOnOrAfter === null) refuse('Conditions NotOnOrAfter missing');
  if (!within(nowMs, skewMs, instant(condition.getAttribute('NotBefore')), notOnOrAfter))
    refuse('Conditions window');
  const audiences = elements(condition, SAML_NS, 'Audience').map((a) => a.textContent?.trim());
  if (!audiences.includes(party.spEntityId)) refuse('Audience');

  const [subject] = directChildren(assertion, SAML_NS, 'Subject');
  if (!subject) return refuse('Subject');
  const bearer = directChildren(subject, SAML_NS, 'SubjectConfirmation').filter(
    (c) => c.getAttribute('Method') === BEARER,
  );
  const confirmed = bearer.some((c) => {
    const [data] = directChildren(c, SAML_NS, 'SubjectConfirmationData');
    if (!data) return false;
    if (data.getAttribute('Recipient') !== party.acsUrl) return false;
    const dataInResponseTo = data.getAttribute('InResponseTo') || null;
    if (dataInResponseTo !== (expected?.requestId ?? null)) return false;
    const until = instant(data.getAttribute('NotOnOrAfter'));
    return until !== null && within(nowMs, skewMs, instant(data.getAttribute('NotBefore')), until);
  });
  if (!confirmed) refuse('SubjectConfirmation');

  const [nameIdElement] = directChildren(subject, SAML_NS, 'NameID');
  // Every text node of the NameID, comments skipped: "a@b.com<!---->.evil.com" reads whole.
  const nameId = (nameIdElement?.textContent ?? '').trim();
  if (nameId.length === 0 || nameId.length > 320 || nameId !== (profile.nameID ?? '').trim())
    refuse('NameID');
  if (nameIdElement && Array.from(nameIdElement.childNodes).some((n) => n.nodeType !== 3))
    refuse('NameID content');

  const attributes: Record<string, string[]> = {};
  for (const statement of directChildren(assertion, SAML_NS, 'AttributeStatement'))
    for (const attribute of directChildren(statement, SAML_NS, 'Attribute')) {
      const name = attribute.getAttribute('Name');
      if (!name) continue;
      attributes[name] = directChildren(attribute, SAML_NS, 'AttributeValue').map((v) =>
        (v.textContent ?? '').trim(),
      );
    }
  return {
    assertionId,
    nameId,
    nameIdFormat: nameIdElement?.getAttribute('Format') || null,
    attributes,
    usableUntil: new Date((notOnOrAfter as number) + skewMs),
  };
}

export { EMAIL_FORMAT };
