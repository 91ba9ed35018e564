import { describe, expect, it } from 'vitest';
import { Cookies } from './cookies.js';

describe('the cookie codec', () => {
  it('prefixes __Host- and sets Secure on https and loopback origins only', () => {
    for (const origin of [
      'https://id.example',
      'http://localhost:3000',
      'http://127.0.0.1:3000',
      'http://[::1]:3000',
    ]) {
      const cookies = new Cookies(origin);
      expect(cookies.secure).toBe(true);
      expect(cookies.name('c')).toBe('__Host-c');
      expect(cookies.serialize('__Host-c', 'v', 60)).toBe(
        '__Host-c=v; Path=/; Max-Age=60; HttpOnly; SameSite=Lax; Secure',
      );
    }
    const plain = new Cookies('http://id.internal:3000');
    expect(plain.secure).toBe(false);
    expect(plain.name('c')).toBe('c');
    expect(plain.serialize('c', 'v', 60)).toBe('c=v; Path=/; Max-Age=60; HttpOnly; SameSite=Lax');
  });

  it('keeps SameSite=None only where Secure goes with it, and clears with Max-Age=0', () => {
    expect(new Cookies('https://id.example').serialize('a', 'v', 600, 'None')).toBe(
      'a=v; Path=/; Max-Age=600; HttpOnly; SameSite=None; Secure',
    );
    expect(new Cookies('http://id.internal').serialize('a', 'v', 600, 'None')).toBe(
      'a=v; Path=/; Max-Age=600; HttpOnly; SameSite=Lax',
    );
    expect(new Cookies('https://id.example').clearing('a')).toBe(
      'a=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure',
    );
    expect(new Cookies('https://id.example').serialize('a', 'v', -5)).toContain('Max-Age=0;');
  });

  it('parses a Cookie header in order, trimmed, unquoting a quoted value, skipping parts without =', () => {
    const cookies = new Cookies('https://id.example');
    expect(cookies.parse(undefined)).toEqual([]);
    expect(cookies.parse('')).toEqual([]);
    expect(cookies.parse(' a=1; junk; b = "2" ;c=x=y; d="')).toEqual([
      { name: 'a', value: '1' },
      { name: 'b', value: '2' },
      { name: 'c', value: 'x=y' },
      { name: 'd', value: '"' },
    ]);
  });
});
