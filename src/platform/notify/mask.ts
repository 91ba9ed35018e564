/**
 * A recipient as it may appear in a log line: `a***@example.com`, `+33******78`.
 * The length of the hidden part is not revealed.
 */
export function maskRecipient(to: string): string {
  const at = to.lastIndexOf('@');
  if (at > 0) {
    return `${to.slice(0, 1)}***${to.slice(at)}`;
  }
  if (at === 0) return '***';
  if (to.length >= 8) {
    return `${to.slice(0, 3)}******${to.slice(-2)}`;
  }
  return '***';
}
