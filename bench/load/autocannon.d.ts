// The part of autocannon 9's API the benchmark uses. The package ships no type declarations and
// no @types package is installed, so these describe what its README documents and node_modules/autocannon/lib/run.js does.

declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    /** hdr-histogram-percentiles-obj: latency in milliseconds, requests and bytes per second. */
    interface Histogram {
      readonly min: number;
      readonly max: number;
      readonly average: number;
      readonly stddev: number;
      readonly p50: number;
      readonly p90: number;
      readonly p97_5: number;
      readonly p99: number;
      readonly p99_9: number;
      readonly p99_99: number;
    }

    /** One request as autocannon builds it; `setupRequest` may change any field before it is sent. */
    interface RequestSpec {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (request: RequestSpec, context: Record<string, unknown>) => RequestSpec | null;
    }

    interface Options {
      readonly url: string;
      readonly connections?: number;
      readonly duration?: number;
      readonly amount?: number;
      readonly timeout?: number;
      readonly pipelining?: number;
      readonly method?: string;
      readonly headers?: Record<string, string>;
      readonly body?: string;
      readonly requests?: readonly RequestSpec[];
    }

    interface Result {
      readonly latency: Histogram;
      readonly requests: Histogram & { readonly total: number; readonly sent: number };
      readonly duration: number;
      readonly errors: number;
      readonly timeouts: number;
      readonly non2xx: number;
      readonly statusCodeStats: Record<string, { readonly count: number }>;
      readonly start: Date;
      readonly finish: Date;
    }

    interface Instance extends EventEmitter {
      stop(): void;
    }
  }

  function autocannon(opts: autocannon.Options, callback: (error: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export = autocannon;
}
