/**
 * Runs a compare-and-set: an `UPDATE … WHERE <expected state> RETURNING id` (or an insert that
 * yields to a unique index), built with Kysely. True when it changed exactly one row, so of two
 * requests racing for one row exactly one sees true (docs/architecture.md, "The request path";
 * tested in test/races/).
 */
export async function changedOne(statement: { execute(): Promise<readonly unknown[]> }): Promise<boolean> {
  return (await statement.execute()).length === 1;
}
