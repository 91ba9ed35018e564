/**
 * sRGB colours as `#rrggbb`, with WCAG 2 relative luminance and contrast ratio
 * (https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio), and the mixes the brand theme derives.
 */
export type Rgb = readonly [number, number, number];

export const HEX_COLOUR = /^#[0-9a-fA-F]{6}$/;

export function parseHex(hex: string): Rgb | null {
  if (!HEX_COLOUR.test(hex)) return null;
  return [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)) as unknown as Rgb;
}

export function toHex(rgb: Rgb): string {
  return `#${rgb.map((c) => Math.round(c).toString(16).padStart(2, '0')).join('')}`;
}

function channel(c: number): number {
  const s = c / 255;
  return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
}

export function luminance([r, g, b]: Rgb): number {
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

/** The WCAG contrast ratio of two colours, 1 to 21. */
export function contrast(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** `a` moved towards `b` by `t` (0: a, 1: b), per channel, rounded to whole values. */
export function mix(a: Rgb, b: Rgb, t: number): Rgb {
  return [0, 1, 2].map((i) => Math.round(a[i] + (b[i] - a[i]) * t)) as unknown as Rgb;
}

function toHsl([r, g, b]: Rgb): [number, number, number] {
  const [rs, gs, bs] = [r / 255, g / 255, b / 255];
  const max = Math.max(rs, gs, bs);
  const min = Math.min(rs, gs, bs);
  const l = (max + min) / 2;
  if (max === min) return [0, 0, l];
  const d = max - min;
  const s = l > 0.5 ? d / (2 - max - min) : d / (max + min);
  const h =
    max === rs ? (gs - bs) / d + (gs < bs ? 6 : 0) : max === gs ? (bs - rs) / d + 2 : (rs - gs) / d + 4;
  return [h / 6, s, l];
}

function fromHsl([h, s, l]: [number, number, number]): Rgb {
  if (s === 0) return [l * 255, l * 255, l * 255].map(Math.round) as unknown as Rgb;
  const q = l < 0.5 ? l * (1 + s) : l + s - l * s;
  const p = 2 * l - q;
  const hue = (t: number) => {
    const u = t < 0 ? t + 1 : t > 1 ? t - 1 : t;
    if (u < 1 / 6) return p + (q - p) * 6 * u;
    if (u < 1 / 2) return q;
    if (u < 2 / 3) return p + (q - p) * (2 / 3 - u) * 6;
    return p;
  };
  return [hue(h + 1 / 3), hue(h), hue(h - 1 / 3)].map((c) => Math.round(c * 255)) as unknown as Rgb;
}

/**
 * The least lightening of `from` (its HSL lightness raised in steps of 1%, hue and saturation
 * kept, so the colour stays as vivid) after which `passes` holds; white if none does sooner.
 */
function lightenUntil(from: Rgb, passes: (c: Rgb) => boolean): Rgb {
  const [h, s, l] = toHsl(from);
  for (let step = 0; l + step / 100 < 1; step++) {
    const c = fromHsl([h, s, l + step / 100]);
    if (passes(c)) return c;
  }
  return [255, 255, 255];
}

/**
 * The least move of `from` towards `towards` (in steps of 1%) after which `passes` holds; null when
 * even `towards` itself fails.
 */
export function nearestPassing(from: Rgb, towards: Rgb, passes: (c: Rgb) => boolean): Rgb | null {
  for (let step = 0; step <= 100; step++) {
    const c = mix(from, towards, step / 100);
    if (passes(c)) return c;
  }
  return null;
}

/*
 * The account pages' theme. The surfaces are those of ui/styles.css (its `--card` and `--bg`, light
 * and dark); the brand's accent is checked and shaded against them so that links, the primary
 * button's text and the focus ring keep WCAG AA in both themes.
 */
const WHITE: Rgb = [255, 255, 255];
const BLACK: Rgb = [0, 0, 0];
const LIGHT = { card: WHITE, bg: parseHex('#f6f7f9') as Rgb };
const DARK = { card: parseHex('#181c22') as Rgb, bg: parseHex('#0f1216') as Rgb };
/** How much accent the soft tint (notice boxes, the step-up box, badges) holds over the card. */
const SOFT = { light: 0.08, dark: 0.14 };
/** Text (and so the primary button's text) needs 4.5:1. */
export const TEXT_CONTRAST = 4.5;

export interface ThemeColours {
  /** Links, the primary button, the focus ring. */
  accent: string;
  /** The text on the primary button. */
  accentInk: string;
  /** A light wash of the accent for boxes and badges. */
  accentSoft: string;
}
export interface Theme {
  light: ThemeColours;
  dark: ThemeColours;
}

/** The least contrast of `accent` with every light surface it is drawn on or carries: white, the page, its tint. */
function lightContrast(accent: Rgb): number {
  const soft = mix(LIGHT.card, accent, SOFT.light);
  return Math.min(contrast(accent, WHITE), contrast(accent, LIGHT.bg), contrast(accent, soft));
}

function darkPasses(accent: Rgb): boolean {
  const soft = mix(DARK.card, accent, SOFT.dark);
  // The dark theme's button text is its page colour, so the page is among the surfaces.
  return [DARK.card, DARK.bg, soft].every((s) => contrast(accent, s) >= TEXT_CONTRAST);
}

/**
 * The light and dark colours for a brand accent, or why the accent cannot be used: in the light
 * theme the accent is used as given, so it must reach 4.5:1 with white text and the light surfaces
 * (the refusal names a darker shade that would); the dark theme's accent is derived, the least
 * lightening of it (hue and saturation kept) that reaches 4.5:1 with the dark surfaces, with dark
 * text on the button.
 */
export function accentTheme(hex: string): Theme | { refusal: string } {
  const accent = parseHex(hex);
  if (!accent) return { refusal: 'must be a colour written #rrggbb' };
  const ratio = lightContrast(accent);
  if (ratio < TEXT_CONTRAST) {
    const darker = nearestPassing(accent, BLACK, (c) => lightContrast(c) >= TEXT_CONTRAST) as Rgb;
    return {
      refusal: `must have a contrast of at least 4.5:1 with white text and the light page (${hex} has ${
        Math.floor(ratio * 100) / 100
      }:1); a darker shade such as ${toHex(darker)} would do`,
    };
  }
  const dark = lightenUntil(accent, darkPasses);
  return {
    light: {
      accent: toHex(accent),
      accentInk: '#ffffff',
      accentSoft: toHex(mix(LIGHT.card, accent, SOFT.light)),
    },
    dark: {
      accent: toHex(dark),
      accentInk: toHex(DARK.bg),
      accentSoft: toHex(mix(DARK.card, dark, SOFT.dark)),
    },
  };
}
