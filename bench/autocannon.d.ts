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
      /** Cycled through by every connection; each may rewrite itself per request. */
      requests?: Request[]
      /** Called with each connection's client as it is made. */
      setupClient? (client: Client): void
    }

    interface Client {
      /** This connection's own requests from now on (built once each unless they rewrite themselves). */
      setRequests (requests: Request[]): void
    }

    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      /** Called before each send; returns the request to send. */
      setupRequest? (request: Request, context: Record<string, unknown>): Request
      onResponse? (status: number, body: string, context: Record<string, unknown>): void
    }

    interface Tick {
      /** Responses completed in the last second. */
      counter: number
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
      on (event: 'tick', listener: (tick: Tick) => void): this
      /** Every response; `responseTime` in milliseconds. */
      on (event: 'response', listener: (client: Client, statusCode: number, resBytes: number, responseTime: number) => void): this
    }
  }

  export = autocannon
}
