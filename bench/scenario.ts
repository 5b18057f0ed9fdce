import type autocannon from 'autocannon'

/** What a scenario's set-up may change in its request. */
export interface RequestShape {
  path?: string
  /** Objects are sent as JSON. */
  body?: unknown
  headers?: Record<string, string>
  /** Per-request rewriting (a random id, a chained token); `path` etc. above are its defaults. */
  requests?: autocannon.Request[]
  /**
   * Each connection's own requests, drawn once as it opens and then sent in turn: random paths
   * without `requests` rebuilding every request on the load generator's core.
   */
  perConnection?: () => autocannon.Request[]
}

export interface SetupContext {
  /** `--quick`: a smoke run, so the million-row scenarios use a smaller table. */
  quick: boolean
}

/** One request shape to load the app with. Adding a scenario is adding an entry to scenarios.ts. */
export interface Scenario {
  name: string
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Starts with `/`; always requested on 127.0.0.1. */
  path: string
  body?: unknown
  headers?: Record<string, string>
  /** Only offered on PostgreSQL (a million rows do not fit the PGlite-over-HTTP top-up). */
  postgresOnly?: boolean
  /** Against another app server: one that signs with EdDSA, one without the session check, or one with metrics on. */
  server?: 'eddsa' | 'stateless' | 'observed'
  /** Also reported as a ratio to this scenario's req/s, when both ran. */
  against?: string
  /**
   * Runs once before the scenario's rounds, against the app at `baseUrl` (e.g. to create a
   * user and log in); what it returns is merged into the request (e.g. an Authorization header).
   */
  setup?: (baseUrl: string, context: SetupContext) => Promise<RequestShape | void>
  /** Runs before every load run, warm-up included (e.g. to mint single-use refresh tokens). */
  beforeRun?: () => Promise<void>
  /** A status the scenario answers by design (a revalidation's 304): not counted as non-2xx. */
  expect?: number
  /** Also reported as a ratio to this bound, measured in the same run (login: argon2 verifies/s). */
  bound?: 'argon2'
}
