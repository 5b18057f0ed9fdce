// The subset of autocannon's API that bench/ uses (@types/autocannon is not installed).
declare module 'autocannon' {
  function autocannon (options: autocannon.Options): autocannon.Instance

  namespace autocannon {
    interface Options {
      url: string
      connections?: number
      /** Seconds. */
      duration?: number
      method?: string
      headers?: Record<string, string>
      body?: string
      /** Seconds before a request counts as a timeout (and an error). */
      timeout?: number
    }

    interface Histogram {
      average: number
      p50: number
      p99: number
    }

    interface Result {
      requests: Histogram
      /** Milliseconds. */
      latency: Histogram
      non2xx: number
      /** Includes timeouts. */
      errors: number
      timeouts: number
      statusCodeStats: Record<string, { count: number }>
    }

    interface Instance extends Promise<Result> {
      stop (): void
    }
  }

  export = autocannon
}
