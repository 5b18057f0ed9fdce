import createError from '@fastify/error'
import type { FastifyError } from 'fastify'

export const ItemNotFound = createError('CATALOG_ITEM_NOT_FOUND', 'item %s not found', 404)

export const InvalidCatalogOptions = createError('CATALOG_INVALID_OPTIONS', 'catalog plugin: %s')

const InvalidInput = createError('CATALOG_INVALID_INPUT', '/%s%s %s', 422)

/** Input that passed its schema but is still wrong: it carries `validation`, so the answer is a 422 with errors[]. */
export function invalidInput (context: 'params' | 'querystring', path: string, message: string): FastifyError {
  return Object.assign(new InvalidInput(context, path, message), {
    validationContext: context,
    validation: [{ keyword: 'catalog', instancePath: path, schemaPath: '#', params: {}, message }]
  })
}
