import { describe, expect, it } from 'vitest';
import { acceptLanguageTags, firstSpoken, localeOfRequest } from './locales.js';

describe("a request's language", () => {
  it('is the best Accept-Language spoken here, by weight then order', () => {
    expect(localeOfRequest('fr-CA,fr;q=0.9,en;q=0.8', 'en')).toBe('fr');
    expect(localeOfRequest('de-DE, en;q=0.4, fr;q=0.5', 'en')).toBe('fr');
    expect(localeOfRequest('en-GB, fr', 'fr')).toBe('en');
    expect(localeOfRequest('FR', 'en')).toBe('fr');
  });

  it('falls back to the configured default when the header names nothing spoken here', () => {
    expect(localeOfRequest(undefined, 'fr')).toBe('fr');
    expect(localeOfRequest('', 'fr')).toBe('fr');
    expect(localeOfRequest('de, *;q=0.5', 'fr')).toBe('fr');
    expect(localeOfRequest('fr;q=0, de', 'en')).toBe('en');
    expect(localeOfRequest('fr;q=abc', 'en')).toBe('en');
  });

  it('reads a hostile header without failing', () => {
    expect(acceptLanguageTags(`${'x,'.repeat(10_000)}fr`)).not.toContain('fr');
    expect(firstSpoken(['', ' ', '-', 'fr-'])).toBe('fr');
  });
});
