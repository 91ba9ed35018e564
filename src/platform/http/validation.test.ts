import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { TaggedUnion } from './schemas.js';
import { makeAjv, validationEntries } from './validation.js';

const Body = TaggedUnion('kind', [
  Type.Object({ kind: Type.Literal('a'), x: Type.String({ minLength: 2 }) }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('b'), y: Type.Integer() }, { additionalProperties: false }),
]);
const validate = makeAjv(false).compile(Body);
const entries = (body: unknown) => {
  expect(validate(body)).toBe(false);
  return validationEntries(validate.errors ?? [], 'body').map(({ field, code }) => ({ field, code }));
};

describe('TaggedUnion bodies', () => {
  it('accepts each form and nothing mixed', () => {
    expect(validate({ kind: 'a', x: 'xx' })).toBe(true);
    expect(validate({ kind: 'b', y: 1 })).toBe(true);
    expect(validate({ kind: 'a', y: 1 })).toBe(false);
    expect(validate({ kind: 'b', x: 'xx', y: 1 })).toBe(false);
  });

  it('reports only the faults of the form the tag names', () => {
    expect(entries({ kind: 'a', x: 'x' })).toEqual([{ field: 'x', code: 'minLength' }]);
    expect(entries({ kind: 'b' })).toEqual([{ field: 'y', code: 'required' }]);
    expect(entries({ kind: 'a', x: 'xx', y: 1 })).toEqual([{ field: 'y', code: 'additionalProperties' }]);
  });

  it('reports a missing, unknown or non-text tag as the fault of the tag itself', () => {
    expect(entries({ x: 'xx' })).toContainEqual({ field: 'kind', code: 'required' });
    expect(entries({ kind: 'c' })).toContainEqual({ field: 'kind', code: 'enum' });
    expect(entries({ kind: 7 })).toContainEqual({ field: 'kind', code: 'type' });
  });
});
