import createError from '@fastify/error'
import type { FastifyError } from 'fastify'

/** Response headers that explain an error to the client: a challenge, a wait. */
export type ProblemHeaders = Record<string, string>

/** An error the root handler answers as a problem document: its status, code, detail (its message) and headers. */
export interface ProblemError extends FastifyError {
  headers?: ProblemHeaders
}

export type ProblemArgs<M extends string> = M extends `${string}%s${infer Rest}` ? [string | number, ...ProblemArgs<Rest>] : []

export interface ProblemSpec<M extends string = string> {
  /** None for an error of the boot (bad options, a database URL), which is never answered over HTTP. */
  status?: number
  code: string
  message: M
  /** Sent with the answer: fixed, or made from the message's arguments. */
  headers?: ProblemHeaders | ((...args: never[]) => ProblemHeaders)
}

export type ProblemSample = [status: number, code: string, detail: string]

/** A declared problem: `new ItemNotFound(7)` throws it, its statics say what it answers. */
export interface ProblemClass<M extends string = string> {
  new (...args: ProblemArgs<M>): ProblemError
  readonly code: string
  readonly status: number | undefined
  readonly template: M
  /** The headers this problem carries, when they are fixed (those made from its arguments are not known here). */
  readonly headers: ProblemHeaders | undefined
  /** `[status, code, detail]` with the detail made from `args`, for an OpenAPI example. */
  example (...args: ProblemArgs<M>): ProblemSample
}

/** A coded error built on @fastify/error that carries its headers, the one way an error says how to answer it. */
export function defineProblem<const M extends string> (spec: ProblemSpec<M>): ProblemClass<M> {
  const Base = createError(spec.code, spec.message, spec.status) as unknown as new (...args: unknown[]) => ProblemError
  const headersOf = spec.headers as ProblemHeaders | ((...args: unknown[]) => ProblemHeaders) | undefined
  class Problem extends Base {
    static readonly code = spec.code
    static readonly status = spec.status
    static readonly template = spec.message
    static readonly headers = typeof headersOf === 'function' ? undefined : headersOf

    constructor (...args: unknown[]) {
      super(...args)
      if (headersOf !== undefined) this.headers = typeof headersOf === 'function' ? headersOf(...args) : headersOf
    }

    static example (...args: unknown[]): ProblemSample {
      const error = new Problem(...args)
      return [error.statusCode ?? 500, error.code, error.message]
    }
  }
  // Named as its base, so that an error and the class it came from agree on `name`, as @fastify/error's do.
  Object.defineProperty(Problem, 'name', { value: Base.name })
  return Problem as unknown as ProblemClass<M>
}

/** A module's registry: `defineProblems({ ItemNotFound: { status: 404, code: 'CATALOG_ITEM_NOT_FOUND', message: 'item %s not found' } })`. */
export function defineProblems<const T extends Record<string, ProblemSpec>> (specs: T): { [K in keyof T]: ProblemClass<T[K]['message']> } {
  return Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, defineProblem(spec)])) as { [K in keyof T]: ProblemClass<T[K]['message']> }
}
