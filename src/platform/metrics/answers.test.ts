import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AnswerMetrics } from './answers.js';

const BOUNDS = [0.001, 0.01, 0.1, 1];
const NAMES = {
  requests: ['answers_total', 'Answers.'] as [string, string],
  duration: ['answer_seconds', 'Durations.'] as [string, string],
};

describe('AnswerMetrics', () => {
  it("exposes exactly what prom-client's Counter and Histogram expose for the same answers", async () => {
    const ours = new Registry();
    const answers = new AnswerMetrics(BOUNDS);
    // biome-ignore lint/suspicious/noExplicitAny: prom-client types registerMetric for its own classes
    for (const m of answers.metrics(NAMES)) ours.registerMetric(m as any);

    const theirs = new Registry();
    const counter = new Counter({
      name: 'answers_total',
      help: 'Answers.',
      labelNames: ['route', 'method', 'status'],
      registers: [theirs],
    });
    const histogram = new Histogram({
      name: 'answer_seconds',
      help: 'Durations.',
      labelNames: ['route', 'method'],
      buckets: BOUNDS,
      registers: [theirs],
    });

    const answered: [string, string, number, number][] = [
      ['/a', 'GET', 200, 0.0005],
      ['/a', 'GET', 200, 0.001],
      ['/a', 'GET', 404, 0.05],
      ['/a', 'POST', 201, 3],
      ['/b/:id', 'GET', 200, 0.2],
      ['unmatched', 'GET', 404, 0.00001],
    ];
    for (const [route, method, status, seconds] of answered) {
      answers.record(route, method, status, seconds);
      counter.inc({ route, method, status: String(status) });
      histogram.observe({ route, method }, seconds);
    }
    const lines = (text: string) => text.split('\n').filter(Boolean).sort();
    expect(lines(await ours.metrics())).toEqual(lines(await theirs.metrics()));
  });
});
