/** The part of JSON Schema that the service's route schemas use, as the OpenAPI document shows it. */
export interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  dependentRequired?: Record<string, string[]>
  items?: JsonSchema
  maxItems?: number
  enum?: unknown[]
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  anyOf?: JsonSchema[]
}

export interface Parameter {
  name: string
  schema: JsonSchema
}

/** One route of the OpenAPI document, reduced to what the fuzzer needs to build requests for it. */
export interface Operation {
  id: string
  method: string
  /** The path template, e.g. `/api/v1/items/{item_id}`. */
  path: string
  pathParams: Parameter[]
  query: Parameter[]
  body?: { contentTypes: string[], schema: JsonSchema }
  secured: boolean
}

interface OpenApiOperation {
  operationId?: string
  parameters?: Array<{ in: string, name: string, schema?: JsonSchema }>
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> }
  security?: unknown[]
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch'])

/** Every operation of the document, in its order. */
export function operationsOf (doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => METHODS.has(method)).map(([method, op]) => {
      const params = (where: string) => (op.parameters ?? [])
        .filter((param) => param.in === where)
        .map((param) => ({ name: param.name, schema: param.schema ?? {} }))
      const content = Object.entries(op.requestBody?.content ?? {})
      return {
        id: op.operationId ?? `${method} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: params('path'),
        query: params('query'),
        body: content.length > 0
          ? { contentTypes: content.map(([type]) => type), schema: content[0]?.[1].schema ?? {} }
          : undefined,
        secured: (op.security ?? []).length > 0
      }
    }))
}

/**
 * The collection a path's id belongs to: `/api/v1/items/{item_id}` -> `/api/v1/items`.
 * A path without a parameter is its own collection.
 */
export const collectionOf = (path: string) => path.replace(/\/\{[^}]+\}$/, '')
