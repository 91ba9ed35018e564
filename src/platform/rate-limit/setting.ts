/** A limit as the configuration gives it (RATE_LIMIT_*): this many requests per window. */
export interface RateLimitSetting {
  max: number;
  windowSeconds: number;
}
