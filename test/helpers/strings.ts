import { serialize } from 'node:v8';

/**
 * Whether V8 holds the string as one byte per character. Its serialiser writes a two-byte header,
 * then the string's tag: '"' (0x22) for one-byte text, 'c' (0x63) for two-byte.
 */
export const isOneByte = (s: string): boolean => serialize(s)[2] === 0x22;
