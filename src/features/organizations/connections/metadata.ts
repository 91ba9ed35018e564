import { X509Certificate } from 'node:crypto';
import { DOMParser, type Element, MIME_TYPE } from '@xmldom/xmldom';

/**
 * An IdP's SAML 2.0 metadata (docs/sso.md, "Metadata"), read with a real XML parser, never a
 * regular expression: the entity id, the HTTP-Redirect single sign-on URL and the signing
 * certificates of its IDPSSODescriptor. A document type declaration is refused outright (no DTD,
 * no entity, whatever it declares).
 */

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

export interface IdpMetadata {
  entityId: string;
  ssoUrl: string;
  certificates: string[];
}

/** A parse that throws on any error or warning (a malformed document is refused, never guessed at). */
export function parseXmlStrict(xml: string) {
  if (xml.includes('<!DOCTYPE') || xml.includes('<!ENTITY')) return null;
  try {
    const doc = new DOMParser({
      onError: (level, message) => {
        throw new Error(`${level}: ${message}`);
      },
    }).parseFromString(xml, MIME_TYPE.XML_TEXT);
    if (doc.doctype !== null || !doc.documentElement) return null;
    return doc;
  } catch {
    return null;
  }
}

/** A certificate given as PEM or base64 DER, as base64 DER; null when it is not an X.509 certificate. */
export function normaliseCertificate(input: string): string | null {
  const base64 = input
    .replace('-----BEGIN CERTIFICATE-----', '')
    .replace('-----END CERTIFICATE-----', '')
    .replace(/\s+/g, '');
  if (base64.length === 0 || base64.length > 16_384 || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return null;
  try {
    new X509Certificate(Buffer.from(base64, 'base64'));
    return base64;
  } catch {
    return null;
  }
}

const children = (parent: Element, ns: string, local: string): Element[] =>
  Array.from(parent.getElementsByTagNameNS(ns, local));

/** The metadata's IdP, or null when the document is not one entity with an IDPSSODescriptor. */
export function parseIdpMetadata(xml: string): IdpMetadata | null {
  const doc = parseXmlStrict(xml);
  const root = doc?.documentElement;
  if (!root || root.namespaceURI !== MD || root.localName !== 'EntityDescriptor') return null;
  const entityId = root.getAttribute('entityID');
  const [idp, ...others] = children(root, MD, 'IDPSSODescriptor');
  if (!entityId || !idp || others.length > 0) return null;
  const sso = children(idp, MD, 'SingleSignOnService').find((e) => e.getAttribute('Binding') === REDIRECT);
  const ssoUrl = sso?.getAttribute('Location');
  if (!ssoUrl) return null;
  const certificates: string[] = [];
  for (const key of children(idp, MD, 'KeyDescriptor')) {
    const use = key.getAttribute('use');
    if (use && use !== 'signing') continue;
    for (const cert of children(key, DS, 'X509Certificate')) {
      const normalised = normaliseCertificate(cert.textContent ?? '');
      if (normalised && !certificates.includes(normalised)) certificates.push(normalised);
    }
  }
  if (certificates.length === 0) return null;
  return { entityId, ssoUrl, certificates };
}

/** What a metadata URL fetch may take: its time and its size. */
export interface MetadataFetchLimits {
  timeoutMs: number;
  maxBytes: number;
  /** Plain http (tests on loopback only; the default fetcher asks https). */
  allowHttp?: boolean;
}

/**
 * The document at `url`, within the time and size allowed; null when the address is refused (not
 * https), and a thrown MetadataUnavailable when it does not answer a document in time.
 */
export async function fetchMetadata(url: string, limits: MetadataFetchLimits): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== 'https:' && !(limits.allowHttp && parsed.protocol === 'http:')) return null;
  try {
    const response = await fetch(parsed, {
      signal: AbortSignal.timeout(limits.timeoutMs),
      redirect: 'error',
      headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' },
    });
    if (!response.ok || !response.body) throw new MetadataUnavailable();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > limits.maxBytes) throw new MetadataUnavailable();
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  } catch {
    throw new MetadataUnavailable();
  }
}

export class MetadataUnavailable extends Error {}
