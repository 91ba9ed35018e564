import { invalidSyntax, invalidValue, mutability } from './errors.js';

// The SCIM User and Group resources (RFC 7643 §4): what a directory's body means, and how a stored
// user is shown. Bodies are read here, attribute by attribute (a directory's dialect is tolerated
// where RFC 7643 lets it be: case of names, booleans as strings); anything else is invalidValue.

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

const TEXT_MAX = 320;

export interface ScimEmail {
  value: string;
  type?: string;
  primary?: boolean;
  display?: string;
}

/** What the service keeps of a user's body beside userName, externalId and active. */
export interface UserAttributes {
  name?: { givenName?: string; familyName?: string; middleName?: string; formatted?: string };
  displayName?: string;
  nickName?: string;
  title?: string;
  preferredLanguage?: string;
  emails?: ScimEmail[];
  enterprise?: { employeeNumber?: string; department?: string; manager?: { value: string } };
}

export interface UserInput {
  userName: string;
  externalId: string | null;
  active: boolean;
  attributes: UserAttributes;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An attribute by its name, case-insensitively (RFC 7643 §2.1: attribute names are case-insensitive). */
function pick(body: Json, name: string): unknown {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(body)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

function text(value: unknown, field: string, max = TEXT_MAX): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidValue(`${field} must be a string.`);
  // PostgreSQL's text holds no U+0000; control characters are no part of a name.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(value)) throw invalidValue(`${field} holds a control character.`);
  if ([...value].length > max) throw invalidValue(`${field} is longer than ${max} characters.`);
  return value;
}

/** A boolean, or (Entra ID) the strings "True" and "False" in any case. */
export function booleanOf(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw invalidValue(`${field} must be a boolean.`);
}

function emailsOf(value: unknown): ScimEmail[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalidValue('emails must be an array.');
  if (value.length > 10) throw invalidValue('emails holds more than 10 values.');
  return value.map((e, i) => {
    if (!isObject(e)) throw invalidValue(`emails[${i}] must be an object.`);
    const v = text(pick(e, 'value'), `emails[${i}].value`);
    if (v === undefined || v === '') throw invalidValue(`emails[${i}].value is required.`);
    const type = text(pick(e, 'type'), `emails[${i}].type`, 32);
    const primary = booleanOf(pick(e, 'primary'), `emails[${i}].primary`);
    const display = text(pick(e, 'display'), `emails[${i}].display`);
    return {
      value: v,
      ...(type !== undefined ? { type } : {}),
      ...(primary !== undefined ? { primary } : {}),
      ...(display !== undefined ? { display } : {}),
    };
  });
}

function nameOf(value: unknown): UserAttributes['name'] {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw invalidValue('name must be an object.');
  const out: NonNullable<UserAttributes['name']> = {};
  for (const key of ['givenName', 'familyName', 'middleName', 'formatted'] as const) {
    const v = text(pick(value, key), `name.${key}`, 100);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function enterpriseOf(value: unknown): UserAttributes['enterprise'] {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw invalidValue(`${ENTERPRISE_SCHEMA} must be an object.`);
  const out: NonNullable<UserAttributes['enterprise']> = {};
  const employeeNumber = text(pick(value, 'employeeNumber'), 'employeeNumber', 100);
  const department = text(pick(value, 'department'), 'department', 100);
  if (employeeNumber !== undefined) out.employeeNumber = employeeNumber;
  if (department !== undefined) out.department = department;
  const manager = pick(value, 'manager');
  // Entra ID sends the manager as its id string; RFC 7643 as an object with `value`.
  const managerId = isObject(manager)
    ? text(pick(manager, 'value'), 'manager.value')
    : text(manager, 'manager');
  if (managerId) out.manager = { value: managerId };
  return out;
}

/**
 * A User body (POST, PUT, or the document a PATCH produced) as the service keeps it. `id` and
 * `meta` are read-only and ignored (RFC 7643 §2.2); unknown attributes are ignored too.
 */
export function readUser(body: unknown): UserInput {
  if (!isObject(body)) throw invalidSyntax('The body must be a JSON object.');
  const schemas = pick(body, 'schemas');
  if (schemas !== undefined && (!Array.isArray(schemas) || !schemas.every((s) => typeof s === 'string')))
    throw invalidValue('schemas must be an array of strings.');
  const userName = text(pick(body, 'userName'), 'userName');
  if (userName === undefined || userName.trim() === '') throw invalidValue('userName is required.');
  const externalId = text(pick(body, 'externalId'), 'externalId') ?? null;
  const active = booleanOf(pick(body, 'active'), 'active') ?? true;
  const attributes: UserAttributes = {};
  const name = nameOf(pick(body, 'name'));
  if (name && Object.keys(name).length > 0) attributes.name = name;
  for (const key of ['displayName', 'nickName', 'title', 'preferredLanguage'] as const) {
    const v = text(pick(body, key), key, 100);
    if (v !== undefined) attributes[key] = v;
  }
  const emails = emailsOf(pick(body, 'emails'));
  if (emails && emails.length > 0) attributes.emails = emails;
  const enterprise = enterpriseOf(pick(body, ENTERPRISE_SCHEMA));
  if (enterprise && Object.keys(enterprise).length > 0) attributes.enterprise = enterprise;
  return { userName, externalId: externalId === '' ? null : externalId, active, attributes };
}

/** The address that becomes the identity's email: the primary email, else the first, else userName. */
export function primaryEmail(input: UserInput): string {
  const emails = input.attributes.emails ?? [];
  return (emails.find((e) => e.primary) ?? emails[0])?.value ?? input.userName;
}

export interface UserView {
  identityId: string;
  userName: string;
  externalId: string | null;
  active: boolean;
  attributes: UserAttributes;
  groups: { id: string; displayName: string }[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export const etagOf = (version: number) => `W/"${version}"`;

/** The stored user as a SCIM User (RFC 7643 §4.1), with its meta. */
export function userResource(u: UserView, base: string): Json {
  const { enterprise, ...core } = u.attributes;
  return {
    schemas: enterprise ? [USER_SCHEMA, ENTERPRISE_SCHEMA] : [USER_SCHEMA],
    id: u.identityId,
    ...(u.externalId !== null ? { externalId: u.externalId } : {}),
    userName: u.userName,
    ...core,
    active: u.active,
    groups: u.groups.map((g) => ({ value: g.id, display: g.displayName, $ref: `${base}/Groups/${g.id}` })),
    ...(enterprise ? { [ENTERPRISE_SCHEMA]: enterprise } : {}),
    meta: {
      resourceType: 'User',
      created: u.createdAt.toISOString(),
      lastModified: u.updatedAt.toISOString(),
      version: etagOf(u.version),
      location: `${base}/Users/${u.identityId}`,
    },
  };
}

export interface GroupInput {
  displayName: string;
  externalId: string | null;
  /** The member ids, when the body names them. */
  members: string[] | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The member ids of a `members` value (an array of `{ value }`), lower-cased; refused when not ids. */
export function memberIds(value: unknown, field = 'members'): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length > 10_000) throw invalidValue(`${field} holds more than 10000 values.`);
  return list.map((m, i) => {
    const id = isObject(m) ? pick(m, 'value') : m;
    if (typeof id !== 'string' || !UUID.test(id))
      throw invalidValue(`${field}[${i}].value must be a user id.`);
    return id.toLowerCase();
  });
}

export function readGroup(body: unknown): GroupInput {
  if (!isObject(body)) throw invalidSyntax('The body must be a JSON object.');
  const displayName = text(pick(body, 'displayName'), 'displayName', 256);
  if (displayName === undefined || displayName.trim() === '') throw invalidValue('displayName is required.');
  const externalId = text(pick(body, 'externalId'), 'externalId') ?? null;
  const members = pick(body, 'members');
  return {
    displayName,
    externalId: externalId === '' ? null : externalId,
    members: members === undefined || members === null ? undefined : memberIds(members),
  };
}

/** A read-only attribute a body tried to change to another value (RFC 7644 §3.5.1). */
export function checkImmutableId(body: unknown, id: string): void {
  if (isObject(body)) {
    const given = pick(body, 'id');
    if (given !== undefined && given !== id) throw mutability('id is immutable.');
  }
}

export function groupResource(
  g: {
    id: string;
    displayName: string;
    externalId: string | null;
    version: number;
    createdAt: Date;
    updatedAt: Date;
  },
  members: { identityId: string; userName: string }[],
  base: string,
): Json {
  return {
    schemas: [GROUP_SCHEMA],
    id: g.id,
    ...(g.externalId !== null ? { externalId: g.externalId } : {}),
    displayName: g.displayName,
    members: members.map((m) => ({
      value: m.identityId,
      display: m.userName,
      $ref: `${base}/Users/${m.identityId}`,
    })),
    meta: {
      resourceType: 'Group',
      created: g.createdAt.toISOString(),
      lastModified: g.updatedAt.toISOString(),
      version: etagOf(g.version),
      location: `${base}/Groups/${g.id}`,
    },
  };
}

/**
 * `attributes` / `excludedAttributes` (RFC 7644 §3.4.2.5): the resource with only the named
 * attributes (and those always returned: id, schemas, meta), or without the excluded ones. Names
 * are matched case-insensitively; a sub-attribute (`name.givenName`) keeps or drops its part.
 */
export function project(resource: Json, attributes?: string, excluded?: string): Json {
  const list = (s: string | undefined) =>
    (s ?? '')
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a !== '')
      .map((a) => {
        // A fully qualified name: the schema URN, then the attribute.
        for (const urn of [USER_SCHEMA, GROUP_SCHEMA]) {
          if (a.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) return a.slice(urn.length + 1);
        }
        return a;
      });
  const keep = list(attributes);
  const drop = list(excluded);
  const key = (o: Json, name: string) => Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  if (keep.length > 0) {
    const out: Json = { schemas: resource.schemas, id: resource.id, meta: resource.meta };
    for (const a of keep) {
      const [head, sub] = a.split(/\.(.*)/s);
      const k = key(resource, head);
      if (k === undefined) continue;
      const v = resource[k];
      if (sub && isObject(v)) {
        const sk = key(v, sub);
        if (sk !== undefined) out[k] = { ...(isObject(out[k]) ? (out[k] as Json) : {}), [sk]: v[sk] };
      } else {
        out[k] = v;
      }
    }
    return out;
  }
  if (drop.length > 0) {
    const out: Json = { ...resource };
    for (const a of drop) {
      const [head, sub] = a.split(/\.(.*)/s);
      const k = key(out, head);
      if (k === undefined || ['id', 'schemas', 'meta'].includes(k)) continue;
      const v = out[k];
      if (sub && isObject(v)) {
        const sk = key(v, sub);
        if (sk !== undefined) {
          const { [sk]: _gone, ...rest } = v;
          out[k] = rest;
        }
      } else {
        delete out[k];
      }
    }
    return out;
  }
  return resource;
}
