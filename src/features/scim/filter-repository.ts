import { type Expression, type ExpressionBuilder, expressionBuilder, type SqlBool } from 'kysely';
import { type Filter, parse } from 'scim2-parse-filter';
import type { ScimGroupMembers, ScimGroups, ScimUsers } from '../../platform/db/schema.js';
import { invalidFilter } from './errors.js';
import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA } from './resource.js';

// A SCIM filter (RFC 7644 §3.4.2.2), parsed by scim2-parse-filter, as one SQL condition over the
// users (alias `u`) or groups (alias `g`) of migration 0033, said with Kysely's expression builder.
// Every value is a bound parameter; an attribute, operator or value the service cannot compare is
// invalidFilter (400), never a 500.

/** One element of `attributes -> 'emails'`. */
interface EmailElement {
  value?: string;
  type?: string;
  display?: string;
  primary?: boolean;
}
/** The shape of `scim_users.attributes` the filter reads (the column is typed as any JSON). */
interface UserAttributes {
  displayName?: string;
  name?: { givenName?: string; familyName?: string };
  enterprise?: { employeeNumber?: string; department?: string; manager?: { value?: string } };
  emails?: EmailElement[];
}
/**
 * The tables a filter condition names: `u` and `g` of the list query, and inside EXISTS the emails
 * elements `e` (jsonb_array_elements' one column is `value`) and the members `m`.
 */
interface Scope {
  u: Omit<ScimUsers, 'attributes'> & { attributes: UserAttributes };
  g: ScimGroups;
  e: { value: EmailElement };
  m: ScimGroupMembers;
  scim_group_members: ScimGroupMembers;
}
type Eb = ExpressionBuilder<Scope, keyof Scope>;
/** A free-standing builder: the condition is built (and refused) before any query runs. */
const eb: Eb = expressionBuilder<Scope, keyof Scope>();

type Kind = 'text' | 'exact' | 'boolean' | 'instant';
interface Column {
  kind: Kind;
  ref: Expression<unknown>;
}
/** A multi-valued attribute (emails, members): some element matches a condition. */
interface Multi {
  some: (where: Expression<SqlBool>) => Expression<SqlBool>;
  sub: (name: string) => Column | undefined;
  defaultSub: string;
}
interface Attributes {
  single: (name: string) => Column | undefined;
  multi: (name: string) => Multi | undefined;
}

/** The longest filter read: a directory's filters are one or two comparisons. */
const MAX_FILTER = 2048;
const MAX_NODES = 50;

const stripUrn = (path: string) => {
  const lower = path.toLowerCase();
  for (const urn of [USER_SCHEMA, GROUP_SCHEMA]) {
    if (lower.startsWith(`${urn.toLowerCase()}:`)) return path.slice(urn.length + 1);
  }
  if (lower.startsWith(`${ENTERPRISE_SCHEMA.toLowerCase()}:`))
    return `enterprise.${path.slice(ENTERPRISE_SCHEMA.length + 1)}`;
  return path;
};

const emailElement = (name: string): Column | undefined => {
  const key = ({ value: 'value', type: 'type', display: 'display' } as const)[
    name.toLowerCase() as 'value' | 'type' | 'display'
  ];
  if (key) return { kind: 'text', ref: eb.ref('e.value', '->>').key(key) };
  if (name.toLowerCase() === 'primary')
    return { kind: 'boolean', ref: eb.cast(eb.ref('e.value', '->').key('primary'), 'boolean') };
  return undefined;
};

const USER_ATTRIBUTES: Attributes = {
  single: (name) => {
    // `->>` is the last step's operator (text); the steps before it are `->`, as `#>>` walks.
    const attributes = () => eb.ref('u.attributes', '->>');
    switch (name.toLowerCase()) {
      case 'id':
        return { kind: 'exact', ref: eb.cast('u.identity_id', 'text') };
      case 'username':
        return { kind: 'text', ref: eb.ref('u.user_name') };
      case 'externalid':
        return { kind: 'exact', ref: eb.ref('u.external_id') };
      case 'active':
        return { kind: 'boolean', ref: eb.ref('u.active') };
      case 'meta.lastmodified':
        return { kind: 'instant', ref: eb.ref('u.updated_at') };
      case 'meta.created':
        return { kind: 'instant', ref: eb.ref('u.created_at') };
      case 'displayname':
        return { kind: 'text', ref: attributes().key('displayName') };
      case 'name.givenname':
        return { kind: 'text', ref: attributes().key('name').key('givenName') };
      case 'name.familyname':
        return { kind: 'text', ref: attributes().key('name').key('familyName') };
      case 'enterprise.employeenumber':
        return { kind: 'text', ref: attributes().key('enterprise').key('employeeNumber') };
      case 'enterprise.department':
        return { kind: 'text', ref: attributes().key('enterprise').key('department') };
      case 'enterprise.manager.value':
      case 'enterprise.manager':
        return { kind: 'exact', ref: attributes().key('enterprise').key('manager').key('value') };
      default:
        return undefined;
    }
  },
  multi: (name) =>
    name.toLowerCase() === 'emails'
      ? {
          some: (where) =>
            eb.exists(
              eb
                .selectFrom(
                  eb
                    .fn<EmailElement>('jsonb_array_elements', [
                      eb.fn.coalesce(
                        eb.ref('u.attributes', '->').key('emails'),
                        eb.cast(eb.val('[]'), 'jsonb'),
                      ),
                    ])
                    .as('e'),
                )
                .select(eb.lit(1).as('one'))
                .where(where),
            ),
          sub: emailElement,
          defaultSub: 'value',
        }
      : undefined,
};

const GROUP_ATTRIBUTES: Attributes = {
  single: (name) => {
    switch (name.toLowerCase()) {
      case 'id':
        return { kind: 'exact', ref: eb.cast('g.id', 'text') };
      case 'displayname':
        return { kind: 'text', ref: eb.ref('g.display_name') };
      case 'externalid':
        return { kind: 'exact', ref: eb.ref('g.external_id') };
      case 'meta.lastmodified':
        return { kind: 'instant', ref: eb.ref('g.updated_at') };
      case 'meta.created':
        return { kind: 'instant', ref: eb.ref('g.created_at') };
      default:
        return undefined;
    }
  },
  multi: (name) =>
    name.toLowerCase() === 'members'
      ? {
          some: (where) =>
            eb.exists(
              eb
                .selectFrom('scim_group_members as m')
                .select(eb.lit(1).as('one'))
                .whereRef('m.group_id', '=', 'g.id')
                .where(where),
            ),
          sub: (s) =>
            s.toLowerCase() === 'value'
              ? { kind: 'exact', ref: eb.cast('m.identity_id', 'text') }
              : undefined,
          defaultSub: 'value',
        }
      : undefined,
};

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function compare(col: Column, op: string, value: unknown, path: string): Expression<SqlBool> {
  if (op === 'pr') {
    return col.kind === 'text' || col.kind === 'exact'
      ? eb.and([eb(col.ref, 'is not', null), eb(col.ref, '<>', '')])
      : eb(col.ref, 'is not', null);
  }
  if (col.kind === 'boolean') {
    if (typeof value !== 'boolean' || (op !== 'eq' && op !== 'ne'))
      throw invalidFilter(`${path} compares only with eq or ne and true or false.`);
    return eb(col.ref, op === 'eq' ? '=' : 'is distinct from', value);
  }
  if (col.kind === 'instant') {
    const at = typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
    // Years PostgreSQL's timestamptz and JavaScript agree on (no year 0, no five-digit years).
    const year = at.getUTCFullYear();
    if (Number.isNaN(at.getTime()) || !/^\d{4}-\d{2}-\d{2}T/.test(String(value)) || year < 1 || year > 9999)
      throw invalidFilter(`${path} compares with a date-time string.`);
    const ops = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' } as const;
    if (!Object.hasOwn(ops, op)) throw invalidFilter(`${path} does not take ${op}.`);
    return eb(col.ref, ops[op as keyof typeof ops], eb.cast(eb.val(at), 'timestamptz'));
  }
  if (typeof value !== 'string') throw invalidFilter(`${path} compares with a string.`);
  // PostgreSQL's text holds no U+0000: such a value matches nothing any user could hold.
  if (value.includes('\u0000')) throw invalidFilter(`${path} compares with a value holding U+0000.`);
  // Case-insensitive attributes (RFC 7643 §2.2 caseExact false) compare lower-cased.
  const left = col.kind === 'text' ? eb.fn('lower', [col.ref]) : col.ref;
  const right = col.kind === 'text' ? value.toLowerCase() : value;
  // LIKE's default escape character is the backslash likeEscape puts before \ % and _.
  switch (op) {
    case 'eq':
      return eb(left, '=', right);
    case 'ne':
      return eb(left, 'is distinct from', right);
    case 'co':
      return eb(left, 'like', `%${likeEscape(right)}%`);
    case 'sw':
      return eb(left, 'like', `${likeEscape(right)}%`);
    case 'ew':
      return eb(left, 'like', `%${likeEscape(right)}`);
    case 'gt':
      return eb(left, '>', right);
    case 'ge':
      return eb(left, '>=', right);
    case 'lt':
      return eb(left, '<', right);
    case 'le':
      return eb(left, '<=', right);
    default:
      throw invalidFilter(`Unknown operator ${op}.`);
  }
}

function build(f: Filter, attrs: Attributes, inElement?: Multi, depth = 0): Expression<SqlBool> {
  if (depth > 20) throw invalidFilter('The filter nests too deeply.');
  switch (f.op) {
    case 'and':
    case 'or': {
      const parts = f.filters.map((x) => build(x, attrs, inElement, depth + 1));
      return f.op === 'and' ? eb.and(parts) : eb.or(parts);
    }
    case 'not':
      return eb.not(eb.fn.coalesce(build(f.filter, attrs, inElement, depth + 1), eb.lit(false)));
    case '[]': {
      if (inElement) throw invalidFilter('A value filter cannot nest another.');
      const multi = attrs.multi(stripUrn(f.attrPath));
      if (!multi) throw invalidFilter(`${f.attrPath} is not a multi-valued attribute.`);
      return multi.some(build(f.valFilter, attrs, multi, depth + 1));
    }
    default: {
      const path = stripUrn(f.attrPath);
      const value = f.op === 'pr' ? undefined : f.compValue;
      if (inElement) {
        const col = inElement.sub(path);
        if (!col) throw invalidFilter(`${f.attrPath} is not a sub-attribute here.`);
        return compare(col, f.op, value, f.attrPath);
      }
      const single = attrs.single(path);
      if (single) return compare(single, f.op, value, f.attrPath);
      // `emails.value eq "x"` or `emails eq "x"`: some element matches.
      const [head, sub] = path.split(/\.(.*)/s);
      const multi = attrs.multi(head);
      if (multi) {
        const col = multi.sub(sub ?? multi.defaultSub);
        if (!col) throw invalidFilter(`${f.attrPath} is not a filterable attribute.`);
        return multi.some(compare(col, f.op, value, f.attrPath));
      }
      throw invalidFilter(`${f.attrPath} is not a filterable attribute.`);
    }
  }
}

function size(f: Filter): number {
  if (f.op === 'and' || f.op === 'or') return 1 + f.filters.reduce((n, x) => n + size(x), 0);
  if (f.op === 'not') return 1 + size(f.filter);
  if (f.op === '[]') return 1 + size(f.valFilter);
  return 1;
}

/**
 * `attr[filter].sub op value` (the form directories send, e.g. `emails[type eq "work"].value eq
 * "a@example.com"`) is not in RFC 7644's filter grammar and the parser reads it as two separate
 * conditions; it is rewritten to the grammar's `attr[filter and sub op value]`, one element matching both.
 */
function valuePathForm(filter: string): string {
  return filter.replace(
    /(\b[A-Za-z][\w-]*)\[([^[\]"]*(?:"(?:[^"\\]|\\.)*"[^[\]"]*)*)\]\.([A-Za-z][\w-]*)\s+(?:(pr)\b|(eq|ne|co|sw|ew|gt|ge|lt|le)\s+("(?:[^"\\]|\\.)*"|true|false|null|-?\d+(?:\.\d+)?))/gi,
    (_all, attr: string, inner: string, sub: string, pr?: string, op?: string, value?: string) =>
      pr ? `${attr}[(${inner}) and ${sub} pr]` : `${attr}[(${inner}) and ${sub} ${op} ${value}]`,
  );
}

function parsed(filter: string): Filter {
  if (filter.length > MAX_FILTER) throw invalidFilter(`The filter is longer than ${MAX_FILTER} characters.`);
  let f: Filter;
  try {
    f = parse(valuePathForm(filter));
  } catch {
    throw invalidFilter('The filter is not valid SCIM filter syntax.');
  }
  if (typeof f !== 'object' || f === null || size(f) > MAX_NODES)
    throw invalidFilter('The filter is not usable.');
  return f;
}

/** The SQL condition of a Users filter; every user without one. */
export function userFilter(filter: string | undefined): Expression<SqlBool> {
  if (filter === undefined || filter.trim() === '') return eb.lit(true);
  return build(parsed(filter), USER_ATTRIBUTES);
}

/** The SQL condition of a Groups filter; every group without one. */
export function groupFilter(filter: string | undefined): Expression<SqlBool> {
  if (filter === undefined || filter.trim() === '') return eb.lit(true);
  return build(parsed(filter), GROUP_ATTRIBUTES);
}
