import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import { validatorCompiler } from '../../http/validation.js'

type Validate = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null }

const arrayError = (keyword: string, limit: number, message: string): FastifySchemaValidationError =>
  ({ keyword, instancePath: '', schemaPath: `#/${keyword}`, params: { limit }, message })

/**
 * A create's body checked as one row, or as an array of 1 to `maxBatch` rows each checked alone: every bad row
 * is named (`/body/3/title`), not just the first, which a schema of the whole array would stop at.
 */
export function createBodyCompiler (row: object, maxBatch: number): FastifySchemaCompiler<unknown> {
  return (route) => {
    if (route.httpPart !== 'body') return validatorCompiler(route)
    const one = validatorCompiler({ ...route, schema: row }) as Validate
    const check: Validate = (data) => {
      if (!Array.isArray(data)) {
        const valid = one(data)
        check.errors = one.errors
        return valid
      }
      if (data.length === 0) check.errors = [arrayError('minItems', 1, 'must hold at least one row')]
      else if (data.length > maxBatch) check.errors = [arrayError('maxItems', maxBatch, `must hold at most ${maxBatch} rows, the most one request may create`)]
      else {
        const errors: FastifySchemaValidationError[] = []
        data.forEach((item, index) => {
          if (!one(item)) errors.push(...(one.errors ?? []).map((error) => ({ ...error, instancePath: `/${index}${error.instancePath}` })))
        })
        check.errors = errors
      }
      return check.errors.length === 0
    }
    return check
  }
}
