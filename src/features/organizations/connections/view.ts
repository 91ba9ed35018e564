import { createHash, X509Certificate } from 'node:crypto';
import type { ConnectionRow } from './repository.js';

/** Where our SAML service provider answers for a connection (docs/sso.md, "What the IdP needs"). */
export function spEndpoints(publicOrigin: string, connectionId: string) {
  const base = `${publicOrigin}/api/v1/sso/saml/${connectionId}`;
  return { entityId: base, metadataUrl: base, acsUrl: `${base}/acs` };
}

/** Where an OpenID connection's IdP sends the browser back (its registered redirect URI). */
export function oidcRedirectUri(publicOrigin: string, connectionId: string): string {
  return `${publicOrigin}/api/v1/sso/oidc/${connectionId}/callback`;
}

function certificateView(base64: string) {
  const der = Buffer.from(base64, 'base64');
  const x = new X509Certificate(der);
  return {
    certificate: base64,
    sha256: createHash('sha256').update(der).digest('hex'),
    notAfter: new Date(x.validTo).toISOString(),
  };
}

/** A connection as the routes and events show it: never a secret (decryption key, client secret). */
export function connectionView(c: ConnectionRow, publicOrigin: string) {
  return {
    id: c.id,
    organizationId: c.organizationId,
    type: c.type,
    name: c.name,
    enabled: c.enabled,
    defaultRole: c.defaultRole,
    attributeMapping: c.attributeMapping,
    groupAttribute: c.groupAttribute,
    groupRoles: c.groupRoles.map((g) => ({ group: g.group, role: g.role })),
    saml:
      c.type === 'saml'
        ? {
            idpEntityId: c.idpEntityId ?? '',
            ssoUrl: c.ssoUrl ?? '',
            signingCertificates: c.signingCertificates.map(certificateView),
            wantEncrypted: c.wantEncrypted,
            encryptionCertificate: c.decryptionCertificate,
            allowIdpInitiated: c.allowIdpInitiated,
            ...spEndpoints(publicOrigin, c.id),
          }
        : null,
    oidc:
      c.type === 'oidc'
        ? {
            issuer: c.issuer ?? '',
            clientId: c.clientId ?? '',
            clientSecretSet: c.sealedClientSecret !== null,
            redirectUri: oidcRedirectUri(publicOrigin, c.id),
          }
        : null,
    createdAt: new Date(c.createdAt).toISOString(),
    updatedAt: new Date(c.updatedAt).toISOString(),
  };
}

export type ConnectionView = ReturnType<typeof connectionView>;
