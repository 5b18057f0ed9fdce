/** One request shape to load the app with. Adding a scenario is adding an entry below. */
export interface Scenario {
  name: string
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Starts with `/`; always requested on 127.0.0.1. */
  path: string
  /** Objects are sent as JSON. */
  body?: unknown
  headers?: Record<string, string>
  /**
   * Runs once before the scenario's rounds, against the app at `baseUrl` (e.g. to create a
   * user and log in); what it returns is merged into the request (e.g. an Authorization header).
   */
  setup?: (baseUrl: string) => Promise<Partial<Pick<Scenario, 'path' | 'body' | 'headers'>> | void>
}

export const scenarios: Scenario[] = [
  { name: 'health', path: '/api/v1/health' },
  { name: 'readiness', path: '/api/v1/health/ready' },
  { name: 'openapi', path: '/docs/json' }
]
