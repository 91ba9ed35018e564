import { type Field, field, h, uid } from './dom.js';
import { locale } from './i18n.js';
import { t } from './messages/forms.js';

/**
 * One field for "email or phone number" (sign-in, sign-up, recovery). The value decides the form
 * sent: with an '@' it is an email address; digits with spaces, '+', '(', ')', '-' or '.' make a
 * phone number. A phone number in its national form needs its country, picked from a list that
 * starts at the browser's region; one starting with '+' is international and the country is only
 * a default the service ignores. The service normalises both (no phone library in the page).
 */
export type IdentifierForm =
  | { identifierType: 'email'; identifier: string }
  | { identifierType: 'phone'; identifier: string; country: string };

/** Every region the service's phone normaliser knows, with its calling code (region + digits). */
const CALLING_CODES = new Map(
  (
    'AC247 AD376 AE971 AF93 AG1 AI1 AL355 AM374 AO244 AR54 AS1 AT43 AU61 AW297 AX358 AZ994 BA387 ' +
    'BB1 BD880 BE32 BF226 BG359 BH973 BI257 BJ229 BL590 BM1 BN673 BO591 BQ599 BR55 BS1 BT975 ' +
    'BW267 BY375 BZ501 CA1 CC61 CD243 CF236 CG242 CH41 CI225 CK682 CL56 CM237 CN86 CO57 CR506 ' +
    'CU53 CV238 CW599 CX61 CY357 CZ420 DE49 DJ253 DK45 DM1 DO1 DZ213 EC593 EE372 EG20 EH212 ER291 ' +
    'ES34 ET251 FI358 FJ679 FK500 FM691 FO298 FR33 GA241 GB44 GD1 GE995 GF594 GG44 GH233 GI350 ' +
    'GL299 GM220 GN224 GP590 GQ240 GR30 GT502 GU1 GW245 GY592 HK852 HN504 HR385 HT509 HU36 ID62 ' +
    'IE353 IL972 IM44 IN91 IO246 IQ964 IR98 IS354 IT39 JE44 JM1 JO962 JP81 KE254 KG996 KH855 ' +
    'KI686 KM269 KN1 KP850 KR82 KW965 KY1 KZ7 LA856 LB961 LC1 LI423 LK94 LR231 LS266 LT370 LU352 ' +
    'LV371 LY218 MA212 MC377 MD373 ME382 MF590 MG261 MH692 MK389 ML223 MM95 MN976 MO853 MP1 MQ596 ' +
    'MR222 MS1 MT356 MU230 MV960 MW265 MX52 MY60 MZ258 NA264 NC687 NE227 NF672 NG234 NI505 NL31 ' +
    'NO47 NP977 NR674 NU683 NZ64 OM968 PA507 PE51 PF689 PG675 PH63 PK92 PL48 PM508 PR1 PS970 ' +
    'PT351 PW680 PY595 QA974 RE262 RO40 RS381 RU7 RW250 SA966 SB677 SC248 SD249 SE46 SG65 SH290 ' +
    'SI386 SJ47 SK421 SL232 SM378 SN221 SO252 SR597 SS211 ST239 SV503 SX1 SY963 SZ268 TA290 TC1 ' +
    'TD235 TG228 TH66 TJ992 TK690 TL670 TM993 TN216 TO676 TR90 TT1 TV688 TW886 TZ255 UA380 UG256 ' +
    'US1 UY598 UZ998 VA39 VC1 VE58 VG1 VI1 VN84 VU678 WF681 WS685 XK383 YE967 YT262 ZA27 ZM260 ' +
    'ZW263'
  )
    .split(' ')
    .map((entry) => [entry.slice(0, 2), entry.slice(2)] as const),
);

const PHONE = /^\+?[\d\s().-]+$/;

/** What a typed value is: an email address, a phone number, or nothing yet. */
export function kindOf(value: string): 'email' | 'phone' | null {
  const v = value.trim();
  if (v === '') return null;
  if (v.includes('@')) return 'email';
  return PHONE.test(v) && /\d/.test(v) ? 'phone' : null;
}

/** The body form for a value: a phone number with `country`, anything else as an email address. */
export function identifierForm(value: string, country: string): IdentifierForm {
  const identifier = value.trim();
  return kindOf(identifier) === 'phone'
    ? { identifierType: 'phone', identifier, country }
    : { identifierType: 'email', identifier };
}

/** A region's name in the pages' language ("Allemagne"), or its code when the browser has no names. */
function regionName(names: Intl.DisplayNames | null, code: string): string {
  try {
    return names?.of(code) ?? code;
  } catch {
    return code;
  }
}

function regionNames(): Intl.DisplayNames | null {
  try {
    return new Intl.DisplayNames([locale()], { type: 'region' });
  } catch {
    return null;
  }
}

/** The region of the browser's language (en-US -> US; a bare "fr" -> FR), else US. */
export function defaultCountry(): string {
  try {
    const locale = new Intl.Locale(navigator.language || 'en-US');
    const region = locale.region ?? locale.maximize().region;
    if (region && CALLING_CODES.has(region)) return region;
  } catch {
    // An unparseable language tag: the default below.
  }
  return 'US';
}

export interface IdentifierField extends Field {
  country: HTMLSelectElement;
  /** The body form of what is typed now. */
  value(): IdentifierForm;
}

/**
 * The field. `purpose` sets what the browser offers to fill in: a saved username when signing in
 * or recovering, an email address or a telephone number (as the value turns) when signing up.
 */
export function identifierField(purpose: 'sign-in' | 'sign-up' | 'recover'): IdentifierField {
  const base = field({
    label: t('identifier'),
    name: 'identifier',
    type: 'text',
    autocomplete: purpose === 'sign-up' ? 'email' : 'username',
    hint: t('identifierHint'),
  });
  const { input } = base;
  input.spellcheck = false;
  input.setAttribute('autocapitalize', 'none');
  const countryId = uid('country');
  const start = defaultCountry();
  const names = regionNames();
  const options = [...CALLING_CODES.entries()]
    .map(([code, calling]) => ({ code, calling, name: regionName(names, code) }))
    .sort((a, b) => a.name.localeCompare(b.name, locale()));
  const country = h(
    'select',
    { id: countryId, name: 'country' },
    options.map((o) =>
      h(
        'option',
        { value: o.code, selected: o.code === start },
        t('countryOption', { name: o.name, calling: o.calling }),
      ),
    ),
  );
  country.value = start;
  const picker = h(
    'div',
    { class: 'field identifier-country', hidden: true },
    h('label', { for: countryId }, t('country')),
    country,
  );
  base.wrap.classList.add('identifier-field');
  base.wrap.append(picker);
  const update = () => {
    const kind = kindOf(input.value);
    // Only a national number needs its country; an international one carries it.
    picker.hidden = !(kind === 'phone' && !input.value.trim().startsWith('+'));
    if (purpose === 'sign-up') input.autocomplete = kind === 'phone' ? 'tel' : 'email';
  };
  input.addEventListener('input', update);
  update();
  return { ...base, country, value: () => identifierForm(input.value, country.value) };
}

/**
 * A flow's pending step, kept for this tab only: sessionStorage survives a reload and ends with the
 * tab, and is never the URL nor localStorage. Storage a browser refuses (private modes) only
 * means the step does not survive a reload.
 */
export const pendingStep = {
  read<T>(key: string): T | null {
    try {
      const raw = sessionStorage.getItem(`account-ui.${key}`);
      return raw ? (JSON.parse(raw) as T) : null;
    } catch {
      return null;
    }
  },
  write(key: string, value: unknown): void {
    try {
      sessionStorage.setItem(`account-ui.${key}`, JSON.stringify(value));
    } catch {
      // Kept in memory only.
    }
  },
  clear(key: string): void {
    try {
      sessionStorage.removeItem(`account-ui.${key}`);
    } catch {
      // Nothing was kept.
    }
  },
};
