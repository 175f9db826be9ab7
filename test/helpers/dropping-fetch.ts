// A `fetch` for the SDK client's transport that loses one streamed answer half-way, as a dropped connection
// would, so that tests see the client resume it (GET with Last-Event-ID).

/**
 * A fetch that, for the first POST whose body contains `bodyIncludes`, passes its event stream on until
 * `progressEvents` progress notifications went through, then fails the stream. Every other request is plain.
 * `dropped()` says whether it has happened.
 */
export function droppingFetch(bodyIncludes: string, progressEvents: number): { fetch: typeof fetch; dropped: () => boolean } {
  let broken = false;
  const dropping: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (broken || init?.method !== 'POST' || typeof init.body !== 'string' || !init.body.includes(bodyIncludes) || !response.body) return response;
    broken = true;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let seen = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        controller.enqueue(value);
        seen += decoder.decode(value, { stream: true }).split('notifications/progress').length - 1;
        if (seen >= progressEvents) {
          controller.error(new Error('connection lost on purpose'));
          await reader.cancel();
        }
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch: dropping, dropped: () => broken };
}
