/** Every expiry and timestamp comes from here, so tests move time without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.#ms = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(seconds: number): void {
    this.#ms += seconds * 1000;
  }
  set(at: Date | string): void {
    this.#ms = new Date(at).getTime();
  }
}

/** An instant as the API shows it (ISO 8601, UTC), null kept: rows carry Dates or text. */
export const iso = (d: Date | string | null): string | null =>
  d === null ? null : new Date(d).toISOString();
