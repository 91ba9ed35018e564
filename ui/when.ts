/*
 * Times as a person reads them on the devices and history pages: "Active now", "3 hours ago",
 * "Today" / "Yesterday" / "Monday, 23 November". The browser's own locale formats them.
 */

import { locale } from './i18n.js';
import { t } from './messages/activity.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Within this long of its last renewal a session counts as in use now (an access token's life). */
export const ACTIVE_NOW_MS = 15 * MINUTE;

/** "5 minutes ago", "3 hours ago", "2 days ago"; older than a month, the date. */
export function ago(iso: string, now = Date.now()): string {
  const then = Date.parse(iso);
  const elapsed = Math.max(0, now - then);
  const rtf = new Intl.RelativeTimeFormat(locale(), { numeric: 'auto' });
  if (elapsed < MINUTE) return rtf.format(0, 'second');
  if (elapsed < HOUR) return rtf.format(-Math.floor(elapsed / MINUTE), 'minute');
  if (elapsed < DAY) return rtf.format(-Math.floor(elapsed / HOUR), 'hour');
  if (elapsed < 30 * DAY) return rtf.format(-Math.floor(elapsed / DAY), 'day');
  return new Date(then).toLocaleDateString(locale(), { dateStyle: 'medium' });
}

/** The local calendar day of an instant, as a key ("2026-11-25") for grouping. */
export function dayKey(iso: string): string {
  const d = new Date(iso);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** A day's heading: "Today", "Yesterday", else "Monday, 23 November" (with the year when not this one). */
export function dayHeading(iso: string, now = Date.now()): string {
  const key = dayKey(iso);
  if (key === dayKey(new Date(now).toISOString())) return t('today');
  if (key === dayKey(new Date(now - DAY).toISOString())) return t('yesterday');
  const d = new Date(iso);
  const sameYear = d.getFullYear() === new Date(now).getFullYear();
  return d.toLocaleDateString(locale(), {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: sameYear ? undefined : 'numeric',
  });
}

/** The time of day only ("14:05" or "2:05 PM", as the locale writes it). */
export const timeOfDay = (iso: string): string =>
  new Date(iso).toLocaleTimeString(locale(), { timeStyle: 'short' });
