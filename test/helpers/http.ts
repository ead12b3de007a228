/** A JSON request to the server as it goes over the wire, for what the official client does not name. */
export async function jsonRequest(baseUrl: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests check it against schemas
  const json: any = await response.json();
  return { status: response.status, json };
}
