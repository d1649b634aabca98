/**
 * The HTTP server's defaults, apart from the server itself: the CLI shows them in `engram serve --help` without
 * loading Hono, the MCP transport and every route on each command it runs.
 */

/** Default request body limit: 8 MiB, enough for a batch of large tool outputs, small enough to refuse junk. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
export const DEFAULT_HTTP_PORT = 7077;
export const DEFAULT_HTTP_HOST = '127.0.0.1';
