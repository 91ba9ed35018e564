import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, LIST_SCHEMA, USER_SCHEMA } from './resource.js';
import { MAX_RESULTS } from './service.js';

// The discovery endpoints (RFC 7644 §4): what this service provider actually supports, and the
// schemas of the attributes it keeps (RFC 7643 §7). Nothing here is promised that is not built:
// no bulk, no sort, no password change.

const SPC_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export function serviceProviderConfig(base: string, docs: string) {
  return {
    schemas: [SPC_SCHEMA],
    documentationUri: docs,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'SCIM token',
        description:
          'A bearer token created for one organization by its owner or an operator (docs/scim.md).',
        specUri: 'https://www.rfc-editor.org/rfc/rfc6750',
        documentationUri: docs,
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

export function resourceTypes(base: string) {
  return [
    {
      schemas: [RESOURCE_TYPE_SCHEMA],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'A member of the organization',
      schema: USER_SCHEMA,
      schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: [RESOURCE_TYPE_SCHEMA],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'A group of members; mapped to a role by the organization, or plain',
      schema: GROUP_SCHEMA,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
}

interface Attr {
  name: string;
  type: 'string' | 'boolean' | 'complex' | 'dateTime' | 'reference';
  multiValued?: boolean;
  required?: boolean;
  caseExact?: boolean;
  mutability?: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned?: 'always' | 'default' | 'never' | 'request';
  uniqueness?: 'none' | 'server' | 'global';
  description?: string;
  subAttributes?: Attr[];
  referenceTypes?: string[];
}

interface AttrJson {
  [key: string]: unknown;
}

function attr(a: Attr): AttrJson {
  return {
    name: a.name,
    type: a.type,
    multiValued: a.multiValued ?? false,
    description: a.description ?? a.name,
    required: a.required ?? false,
    caseExact: a.caseExact ?? false,
    mutability: a.mutability ?? 'readWrite',
    returned: a.returned ?? 'default',
    uniqueness: a.uniqueness ?? 'none',
    ...(a.referenceTypes ? { referenceTypes: a.referenceTypes } : {}),
    ...(a.subAttributes ? { subAttributes: a.subAttributes.map(attr) } : {}),
  };
}

const text = (name: string, extra: Partial<Attr> = {}): Attr => ({ name, type: 'string', ...extra });

const USER_ATTRIBUTES: Attr[] = [
  text('userName', {
    required: true,
    uniqueness: 'server',
    description: 'Unique in the organization (case-insensitive); an email address unless emails holds one',
  }),
  text('externalId', {
    caseExact: true,
    uniqueness: 'server',
    description: "The directory's id of the user",
  }),
  {
    name: 'name',
    type: 'complex',
    subAttributes: [text('givenName'), text('familyName'), text('middleName'), text('formatted')],
  },
  text('displayName'),
  text('nickName'),
  text('title'),
  text('preferredLanguage'),
  { name: 'active', type: 'boolean', description: 'false suspends the membership' },
  {
    name: 'emails',
    type: 'complex',
    multiValued: true,
    description: 'The primary (else first) email becomes the identity’s address',
    subAttributes: [text('value'), text('type'), text('display'), { name: 'primary', type: 'boolean' }],
  },
  {
    name: 'groups',
    type: 'complex',
    multiValued: true,
    mutability: 'readOnly',
    subAttributes: [
      text('value', { mutability: 'readOnly' }),
      text('display', { mutability: 'readOnly' }),
      { name: '$ref', type: 'reference', referenceTypes: ['Group'], mutability: 'readOnly' },
    ],
  },
];

const ENTERPRISE_ATTRIBUTES: Attr[] = [
  text('employeeNumber'),
  text('department'),
  {
    name: 'manager',
    type: 'complex',
    subAttributes: [text('value', { caseExact: true, description: 'The manager’s id' })],
  },
];

const GROUP_ATTRIBUTES: Attr[] = [
  text('displayName', { required: true, uniqueness: 'server', description: 'Unique in the organization' }),
  text('externalId', { caseExact: true }),
  {
    name: 'members',
    type: 'complex',
    multiValued: true,
    subAttributes: [
      text('value', { mutability: 'immutable', caseExact: true }),
      text('display', { mutability: 'readOnly' }),
      { name: '$ref', type: 'reference', referenceTypes: ['User'], mutability: 'immutable' },
    ],
  },
];

export function schemas(base: string) {
  const schema = (id: string, name: string, description: string, attributes: Attr[]) => ({
    schemas: [SCHEMA_SCHEMA],
    id,
    name,
    description,
    attributes: attributes.map(attr),
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    schema(USER_SCHEMA, 'User', 'User Account', USER_ATTRIBUTES),
    schema(ENTERPRISE_SCHEMA, 'EnterpriseUser', 'Enterprise User', ENTERPRISE_ATTRIBUTES),
    schema(GROUP_SCHEMA, 'Group', 'Group', GROUP_ATTRIBUTES),
  ];
}

export function listOf(resources: unknown[]) {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}
