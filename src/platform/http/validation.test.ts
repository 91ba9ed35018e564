import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { StoredText, TaggedUnion } from './schemas.js';
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

describe('StoredText', () => {
  const text = makeAjv(false).compile(StoredText({ maxLength: 10 }));
  const visible = makeAjv(false).compile(StoredText({ maxLength: 10, visible: true }));

  it('refuses U+0000 anywhere (PostgreSQL text cannot hold it) and keeps the bounds', () => {
    for (const v of ['a\u0000', '\u0000', '\u0000b', 'a\u0000b']) {
      expect(text(v)).toBe(false);
      expect(visible(v)).toBe(false);
    }
    expect(text('')).toBe(false);
    expect(text('x'.repeat(11))).toBe(false);
    expect(text('x'.repeat(10))).toBe(true);
  });

  it('takes any other text; visible also needs one character that is not white space', () => {
    for (const v of ['Équipe ✓', ' a ', 'a\u202e\u0301', '\ud800x']) {
      expect(text(v)).toBe(true);
      expect(visible(v)).toBe(true);
    }
    expect(text('   ')).toBe(true);
    expect(visible('   ')).toBe(false);
    expect(visible('\t\n')).toBe(false);
  });
});
