/**
 * The answers counter and duration histogram, counted in plain numbers on the request path and
 * turned into Prometheus samples only when scraped. prom-client's own Counter and Histogram check
 * and hash the label set on every call, which cost more than the rest of a cheap route's
 * bookkeeping; this keeps one entry per (route pattern, method, status), found by three Map lookups.
 * The exposition is the same as prom-client's: `identity_http_requests_total{route,method,status}`
 * and `identity_http_request_duration_seconds_{bucket,sum,count}{route,method}`.
 */
interface Series {
  route: string;
  method: string;
  status: string;
  count: number;
  sum: number;
  /** Per bound, not cumulative; the last slot counts what is above every bound. */
  buckets: number[];
}

interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** What prom-client's Registry reads from a metric (registerMetric, getMetricsAsString). */
interface RegistryMetric {
  name: string;
  help: string;
  get(): Promise<{ name: string; help: string; type: string; values: Sample[]; aggregator: string }>;
  reset(): void;
}

export class AnswerMetrics {
  /** Every series, in the order first seen: what a scrape reads. */
  readonly #series: Series[] = [];
  /**
   * The same series by route pattern, then method, then status. Not one Map keyed by a string
   * joined from the three: that string was new on every answer, so each lookup hashed it afresh
   * and compared it with the stored key character by character. The pattern and the method are
   * the same string objects on every answer of a route, whose hashes V8 keeps.
   */
  readonly #index = new Map<string, Map<string, Map<number, Series>>>();
  constructor(private readonly bounds: readonly number[]) {}

  record(route: string, method: string, status: number, seconds: number): void {
    let byMethod = this.#index.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.#index.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let s = byStatus.get(status);
    if (s === undefined) {
      s = {
        route,
        method,
        status: String(status),
        count: 0,
        sum: 0,
        buckets: new Array(this.bounds.length + 1).fill(0),
      };
      byStatus.set(status, s);
      this.#series.push(s);
    }
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < this.bounds.length && seconds > this.bounds[i]) i++;
    s.buckets[i]++;
  }

  /** The two metrics, for `registry.registerMetric`. */
  metrics(names: { requests: [string, string]; duration: [string, string] }): RegistryMetric[] {
    const [requestsName, requestsHelp] = names.requests;
    const [durationName, durationHelp] = names.duration;
    const series = this.#series;
    const index = this.#index;
    const bounds = this.bounds;
    const reset = () => {
      series.length = 0;
      index.clear();
    };
    return [
      {
        name: requestsName,
        help: requestsHelp,
        reset,
        get: async () => ({
          name: requestsName,
          help: requestsHelp,
          type: 'counter',
          aggregator: 'sum',
          values: series.map((s) => ({
            labels: { route: s.route, method: s.method, status: s.status },
            value: s.count,
          })),
        }),
      },
      {
        name: durationName,
        help: durationHelp,
        reset,
        get: async () => {
          // The histogram is by route and method: the statuses of one route are added together.
          const byRoute = new Map<
            string,
            { route: string; method: string; sum: number; count: number; buckets: number[] }
          >();
          for (const s of series) {
            const key = `${s.method} ${s.route}`;
            let h = byRoute.get(key);
            if (!h) {
              h = {
                route: s.route,
                method: s.method,
                sum: 0,
                count: 0,
                buckets: new Array(bounds.length + 1).fill(0),
              };
              byRoute.set(key, h);
            }
            h.sum += s.sum;
            h.count += s.count;
            for (let i = 0; i < s.buckets.length; i++) h.buckets[i] += s.buckets[i];
          }
          const values: Sample[] = [];
          for (const h of byRoute.values()) {
            let acc = 0;
            bounds.forEach((le, i) => {
              acc += h.buckets[i];
              values.push({
                labels: { le, route: h.route, method: h.method },
                value: acc,
                metricName: `${durationName}_bucket`,
              });
            });
            values.push({
              labels: { le: '+Inf', route: h.route, method: h.method },
              value: h.count,
              metricName: `${durationName}_bucket`,
            });
            values.push({
              labels: { route: h.route, method: h.method },
              value: h.sum,
              metricName: `${durationName}_sum`,
            });
            values.push({
              labels: { route: h.route, method: h.method },
              value: h.count,
              metricName: `${durationName}_count`,
            });
          }
          return { name: durationName, help: durationHelp, type: 'histogram', aggregator: 'sum', values };
        },
      },
    ];
  }
}
