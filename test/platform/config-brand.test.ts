import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { accentTheme, contrast, parseHex, type Rgb } from '../../src/platform/colour.js';
import { testEnv } from '../helpers/app.js';

/**
 * BRAND_*: the product's name, logo, help link and accent colour. A bad value stops start-up with
 * one line naming the variable; the accent is checked (light) and shaded (dark) by WCAG contrast.
 */
const rgb = (hex: string) => parseHex(hex) as Rgb;
const PRODUCTION = {
  NODE_ENV: 'production',
  PUBLIC_ORIGIN: 'https://id.example.com',
  ARGON2_MEMORY_KIB: '19456',
};

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(testEnv(env));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('the brand configuration', () => {
  it('defaults to the name the pages showed before, no logo, no help link and the blue accent', () => {
    const { brand } = loadConfig(testEnv());
    expect(brand).toMatchObject({ name: 'Your account', accentColor: '#1d4ed8' });
    expect(brand.logoUrl).toBeUndefined();
    expect(brand.supportUrl).toBeUndefined();
    expect(brand.theme.light.accent).toBe('#1d4ed8');
  });

  it('takes a name, an https logo, an https or mailto help link and an accent, in production too', () => {
    const { brand } = loadConfig(
      testEnv({
        ...PRODUCTION,
        BRAND_NAME: 'Acme Cloud 株式会社',
        BRAND_LOGO_URL: 'https://cdn.example.net/acme/logo.svg?v=2',
        BRAND_SUPPORT_URL: 'mailto:help@acme.example',
        BRAND_ACCENT_COLOR: '#0F766E',
      }),
    );
    expect(brand).toMatchObject({
      name: 'Acme Cloud 株式会社',
      logoUrl: 'https://cdn.example.net/acme/logo.svg?v=2',
      supportUrl: 'mailto:help@acme.example',
      accentColor: '#0f766e',
    });
    expect(loadConfig(testEnv({ BRAND_SUPPORT_URL: 'https://help.acme.example/' })).brand.supportUrl).toBe(
      'https://help.acme.example/',
    );
  });

  it('refuses each bad value with one line naming its variable', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ BRAND_NAME: 'x'.repeat(65) }, /^invalid configuration: BRAND_NAME must be 1 to 64 characters/],
      [{ BRAND_NAME: ' Acme' }, /BRAND_NAME must be/],
      [{ BRAND_NAME: 'Acme\n<script>' }, /BRAND_NAME must be/],
      [{ BRAND_LOGO_URL: 'logo.svg' }, /^invalid configuration: BRAND_LOGO_URL must be an absolute/],
      [{ BRAND_LOGO_URL: 'javascript:alert(1)' }, /BRAND_LOGO_URL must be/],
      [{ BRAND_LOGO_URL: 'data:image/svg+xml,<svg/>' }, /BRAND_LOGO_URL must be/],
      [{ BRAND_LOGO_URL: 'https://user:pw@cdn.example.net/logo.png' }, /BRAND_LOGO_URL must be/],
      [{ BRAND_LOGO_URL: 'https://cdn.example.net/logo.png#x' }, /BRAND_LOGO_URL must be/],
      [
        { ...PRODUCTION, BRAND_LOGO_URL: 'http://cdn.example.net/logo.png' },
        /^invalid configuration: BRAND_LOGO_URL must be an https URL in production$/,
      ],
      [{ BRAND_SUPPORT_URL: 'http://help.example.com' }, /^invalid configuration: BRAND_SUPPORT_URL must be/],
      [{ BRAND_SUPPORT_URL: 'javascript:alert(1)' }, /BRAND_SUPPORT_URL must be/],
      [
        { BRAND_ACCENT_COLOR: 'blue' },
        /^invalid configuration: BRAND_ACCENT_COLOR must be a colour written #rrggbb$/,
      ],
      [{ BRAND_ACCENT_COLOR: '#12345' }, /BRAND_ACCENT_COLOR must be a colour/],
    ];
    for (const [env, expected] of cases) {
      const line = refusal(env);
      expect(line, JSON.stringify(env)).toMatch(expected);
      expect(line).not.toContain('\n');
    }
    // http is fine outside production (a logo on a development server).
    expect(loadConfig(testEnv({ BRAND_LOGO_URL: 'http://127.0.0.1:8080/logo.png' })).brand.logoUrl).toBe(
      'http://127.0.0.1:8080/logo.png',
    );
  });

  it('refuses an accent too light for white button text, naming a darker shade that passes', () => {
    // #5b8def against white is about 3.3:1: below AA for text.
    const line = refusal({ BRAND_ACCENT_COLOR: '#5b8def' });
    const m =
      /^invalid configuration: BRAND_ACCENT_COLOR must have a contrast of at least 4\.5:1 .*\(#5b8def has (\d\.\d+):1\); a darker shade such as (#[0-9a-f]{6}) would do$/.exec(
        line,
      );
    expect(m, line).not.toBeNull();
    const [, ratio, suggestion] = m as RegExpExecArray;
    expect(Number(ratio)).toBeLessThan(4.5);
    expect(contrast(rgb('#5b8def'), rgb('#ffffff'))).toBeLessThan(4.5);
    // The suggestion itself starts the service.
    expect(loadConfig(testEnv({ BRAND_ACCENT_COLOR: suggestion })).brand.theme.light.accent).toBe(suggestion);
    // Just above and just below the line: white on #767676 is 4.54:1, on #777777 4.48:1.
    expect(() => loadConfig(testEnv({ BRAND_ACCENT_COLOR: '#777777' }))).toThrow(/BRAND_ACCENT_COLOR/);
    expect(refusal({ BRAND_ACCENT_COLOR: '#ffff00' })).toMatch(/BRAND_ACCENT_COLOR/);
  });
});

describe('the accent theme', () => {
  const DARK_SURFACES = ['#181c22', '#0f1216'].map(rgb);
  const LIGHT_SURFACES = ['#ffffff', '#f6f7f9'].map(rgb);

  it('keeps the accent in light, derives a lighter one for dark, both at 4.5:1 with their surfaces', () => {
    for (const hex of ['#1d4ed8', '#000000', '#0f766e', '#9f1239', '#6b21a8', '#5a5a5a', '#92400e']) {
      const theme = accentTheme(hex);
      if ('refusal' in theme) throw new Error(`${hex}: ${theme.refusal}`);
      expect(theme.light.accent).toBe(hex);
      for (const s of [...LIGHT_SURFACES, rgb(theme.light.accentSoft), rgb(theme.light.accentInk)]) {
        expect(contrast(rgb(theme.light.accent), s), hex).toBeGreaterThanOrEqual(4.5);
      }
      const dark = [...DARK_SURFACES, rgb(theme.dark.accentSoft), rgb(theme.dark.accentInk)].map((s) =>
        contrast(rgb(theme.dark.accent), s),
      );
      expect(Math.min(...dark), hex).toBeGreaterThanOrEqual(4.5);
      // Lightened only as far as needed (in steps of 1%): the closest surface is just above the line.
      expect(Math.min(...dark), hex).toBeLessThan(4.75);
    }
  });

  it('computes the WCAG ratio (black on white is 21:1; equal colours 1:1)', () => {
    expect(contrast(rgb('#000000'), rgb('#ffffff'))).toBeCloseTo(21, 5);
    expect(contrast(rgb('#ffffff'), rgb('#000000'))).toBeCloseTo(21, 5);
    expect(contrast(rgb('#777777'), rgb('#777777'))).toBe(1);
    expect(contrast(rgb('#767676'), rgb('#ffffff'))).toBeCloseTo(4.54, 2);
  });
});
