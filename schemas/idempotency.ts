import { Type } from '@sinclair/typebox'
import { httpProblems } from '../http/errors.js'
import type { ProblemExample } from './error.js'

/** A create that takes an Idempotency-Key, and its 409. */
export const IdempotentCreate = {
  headers: Type.Object({
    'idempotency-key': Type.Optional(Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x20-\\x7e]+$',
      description: 'A key of your choice, such as a UUID, naming this request: sent again with the same body, it gets the first answer ' +
        '(with Idempotent-Replayed: true) and creates nothing; with another body it is 422. Kept IDEMPOTENCY_TTL_HOURS, per user or client address'
    }))
  }),
  inFlight: [...httpProblems.IdempotencyKeyInFlight.example('7c4a'),
    'The request first sent with this Idempotency-Key is still in progress; retry after Retry-After seconds'] satisfies ProblemExample
}
