/**
 * What the Gemini adapter must make of every recorded fixture in /work/shared/reference/gemini-recorded,
 * worked out by reading each file: answer text (length, first and last 20 characters), thought-text length,
 * function calls, internal finish reason, usage [prompt, completion, cached, reasoning] — or the error kind.
 * Prompt = promptTokenCount + toolUsePromptTokenCount; completion = candidatesTokenCount + thoughtsTokenCount.
 */
import type { FinishReason, UpstreamErrorKind } from '../../../src/engine/types.js';

export const RECORDED = '/work/shared/reference/gemini-recorded';

/** Files that are not generateContent answers: Imagen `predict` and countTokens replies. */
export const NOT_CHAT = /generate-images|detailed-token-response|total-tokens|no-billable-characters/;

export interface Text {
  length: number;
  starts: string;
  ends: string;
}
export const txt = (length: number, starts: string, ends: string): Text => ({ length, starts, ends });

export type Expected =
  /** An HTTP error answer: served with this status, it must map to this kind. */
  | { http: number; kind: UpstreamErrorKind }
  /** An answer the adapter refuses (or a stream that breaks) with this kind. */
  | { error: UpstreamErrorKind; text?: Text }
  | {
      finish: FinishReason;
      text: Text | null;
      thinking?: number;
      calls?: Array<[string, string]>;
      usage: [number, number, number, number] | null;
      id?: string;
      model?: string;
    };

const BLOCKED = { finish: 'content_filter', text: txt(0, '', ''), usage: null } as const;

export const UNARY: Record<string, Expected> = {
  // INVALID_ARGUMENT to Google, but the reason is API_KEY_INVALID: the gateway's key is wrong.
  'googleai/unary-failure-api-key.json': { http: 400, kind: 'auth' },
  'googleai/unary-failure-api-key.txt': { http: 400, kind: 'auth' },
  'googleai/unary-failure-finish-reason-safety.json': { finish: 'content_filter', text: txt(38, 'Safety error incomin', 'ing in 5, 4, 3, 2...'), usage: [7, 20, 0, 0] },
  'googleai/unary-failure-finish-reason-safety.txt': { finish: 'content_filter', text: txt(38, 'Safety error incomin', 'ing in 5, 4, 3, 2...'), usage: [7, 20, 0, 0] },
  'googleai/unary-failure-generativelanguage-api-not-enabled.json': { http: 403, kind: 'auth' },
  // No candidates, feedback with only a message: the prompt was blocked.
  'googleai/unary-failure-only-prompt-feedback.json': BLOCKED,
  'googleai/unary-failure-unknown-model.json': { http: 404, kind: 'not_found' },
  'googleai/unary-failure-unknown-model.txt': { http: 404, kind: 'not_found' },
  // finishReason OTHER without content: an empty answer that ended (no closer internal meaning than stop).
  'googleai/unary-failure-with-message-no-content.json': { finish: 'stop', text: null, usage: null },
  'googleai/unary-success-basic-reply-long.json': { finish: 'stop', text: txt(2591, 'Making professional-', 'rio V60, Chemex):**\n'), usage: [9, 1612, 0, 0] },
  'googleai/unary-success-basic-reply-long.txt': { finish: 'stop', text: txt(2591, 'Making professional-', 'rio V60, Chemex):**\n'), usage: [9, 1612, 0, 0] },
  'googleai/unary-success-basic-reply-short.json': { finish: 'stop', text: txt(98, "Google's headquarter", 'View, California**.\n'), usage: [7, 22, 0, 0] },
  'googleai/unary-success-basic-reply-short.txt': { finish: 'stop', text: txt(98, "Google's headquarter", 'View, California**.\n'), usage: [7, 22, 0, 0] },
  'googleai/unary-success-citations.json': { finish: 'stop', text: txt(93, "Okay, let's break do", 'ing area of physics!'), usage: [15, 1667, 0, 0] },
  'googleai/unary-success-citations.txt': { finish: 'stop', text: txt(93, "Okay, let's break do", 'ing area of physics!'), usage: [15, 1667, 0, 0] },
  // executableCode / codeExecutionResult parts are skipped; the text parts around them are joined.
  'googleai/unary-success-code-execution.json': { finish: 'stop', text: txt(102, 'The first 5 prime nu', ' 3 + 5 + 7 + 11 = 28'), usage: [181, 182, 0, 86] },
  'googleai/unary-success-google-maps-grounding.json': { finish: 'stop', text: txt(1093, 'Here are a few pizza', 'livery, and dine-in.'), usage: [68, 375, 0, 87] },
  'googleai/unary-success-google-search-grounding-empty-grounding-chunks.json': { finish: 'stop', text: txt(183, 'The current weather ', 'dity is around 41%.\n'), usage: [8, 59, 0, 0] },
  'googleai/unary-success-google-search-grounding.json': { finish: 'stop', text: txt(182, 'The current weather ', 'dity is around 41%.\n'), usage: [8, 60, 0, 0] },
  'googleai/unary-success-thinking-function-call-thought-summary-signature.json': { finish: 'tool_calls', text: null, thinking: 1319, calls: [['now', '{}']], usage: [38, 509, 0, 501] },
  'googleai/unary-success-thinking-reply-thought-summary.json': { finish: 'stop', text: txt(13, 'Mountain View', 'Mountain View'), thinking: 352, usage: [14, 26, 0, 24] },
  'googleai/unary-success-url-context-mixed-validity.json': { finish: 'stop', text: txt(793, '\nThe valid page, htt', 'rom being retrieved.'), usage: [2079, 358, 0, 46] },
  'googleai/unary-success-url-context.json': { finish: 'stop', text: txt(496, 'Berkshire Hathaway I', 'GEICO advertisement.'), usage: [439, 244, 0, 142] },
  'vertexai/unary-failure-api-key.json': { http: 400, kind: 'auth' },
  'vertexai/unary-failure-context-cache-model-doesnt-match.json': { http: 400, kind: 'bad_request' },
  'vertexai/unary-failure-context-cache-not-found.json': { http: 404, kind: 'not_found' },
  // A candidate with neither parts nor a finish reason is not an answer.
  'vertexai/unary-failure-empty-content.json': { error: 'invalid_response' },
  'vertexai/unary-failure-finish-reason-safety-no-content.json': { finish: 'content_filter', text: null, usage: [8, 0, 0, 0] },
  'vertexai/unary-failure-finish-reason-safety.json': { finish: 'content_filter', text: txt(10, '<redacted>', '<redacted>'), usage: [8, 0, 0, 0] },
  'vertexai/unary-failure-firebaseml-api-not-enabled.json': { http: 403, kind: 'auth' },
  'vertexai/unary-failure-firebasevertexai-api-not-enabled.json': { http: 403, kind: 'auth' },
  // FAILED_PRECONDITION (location not supported): the gateway's project cannot serve, another gateway may.
  'vertexai/unary-failure-http-error.json': { http: 400, kind: 'auth' },
  'vertexai/unary-failure-iam-permission-denied.json': { http: 403, kind: 'auth' },
  'vertexai/unary-failure-image-rejected.json': { http: 400, kind: 'bad_request' },
  'vertexai/unary-failure-invalid-context-cache-id.json': { http: 400, kind: 'bad_request' },
  // An HTML 404 page (wrong base URL): the status alone decides.
  'vertexai/unary-failure-invalid-location-url-not-found.html': { http: 404, kind: 'not_found' },
  'vertexai/unary-failure-invalid-response.json': { error: 'invalid_response' },
  'vertexai/unary-failure-malformed-content.json': { error: 'invalid_response' },
  'vertexai/unary-failure-model-not-found.json': { http: 404, kind: 'not_found' },
  'vertexai/unary-failure-prompt-blocked-safety-with-message.json': BLOCKED,
  'vertexai/unary-failure-prompt-blocked-safety.json': BLOCKED,
  'vertexai/unary-failure-quota-exceeded.json': { http: 429, kind: 'rate_limited' },
  'vertexai/unary-failure-unknown-enum-finish-reason.json': { finish: 'stop', text: txt(9, 'Some text', 'Some text'), usage: null },
  'vertexai/unary-failure-unknown-enum-prompt-blocked.json': BLOCKED,
  'vertexai/unary-failure-unknown-model.json': { http: 404, kind: 'not_found' },
  'vertexai/unary-failure-unsupported-user-location.json': { http: 400, kind: 'auth' },
  'vertexai/unary-success-basic-reply-long.json': { finish: 'stop', text: txt(2104, '1. **Use Freshly Gro', ' minutes of brewing.'), usage: [6, 303, 0, 0] },
  'vertexai/unary-success-basic-reply-short.json': { finish: 'stop', text: txt(25, 'Mountain View, Calif', 'ain View, California'), usage: [6, 7, 0, 0] },
  'vertexai/unary-success-basic-response-long-usage-metadata.json': { finish: 'stop', text: txt(39, 'Here is a descriptio', 'on of the image:\\n\\n'), usage: [1837, 76, 0, 0] },
  'vertexai/unary-success-citations-nolicense.json': { finish: 'stop', text: txt(46, 'Some information cit', 'm an external source'), usage: [11, 135, 0, 0] },
  'vertexai/unary-success-citations.json': { finish: 'stop', text: txt(46, 'Some information cit', 'm an external source'), usage: [15, 253, 0, 0] },
  'vertexai/unary-success-code-execution.json': { finish: 'stop', text: txt(370, 'To find the sum of t', '5, 7, and 11) is 28.'), usage: [391, 384, 0, 192] },
  'vertexai/unary-success-constraint-decoding-json.json': { finish: 'stop', text: txt(433, '[\n  {\n    "name": "F', '2A857"\n    ]\n  }\n]\n\n'), usage: null },
  'vertexai/unary-success-empty-part.json': { finish: 'stop', text: txt(167, 'I can certainly help', ' lots of greenery:\n\n'), usage: [33, 299, 0, 0] },
  'vertexai/unary-success-empty-text-part.json': { finish: 'stop', text: txt(0, '', ''), usage: [8, 0, 0, 0] },
  'vertexai/unary-success-function-call-complex-json-literal.json': {
    finish: 'tool_calls', text: null,
    calls: [['functionName', '{"original_title":"Longer String","current":true,"testObject":{"testProperty":"string property"}}']],
    usage: [774, 4176, 0, 0],
  },
  'vertexai/unary-success-function-call-different-parallel-calls.json': {
    finish: 'tool_calls', text: null, calls: [['sum', '{"y":1,"x":2}'], ['multiply', '{"y":3,"x":4}'], ['subtract', '{"y":5,"x":6}']], usage: null,
  },
  'vertexai/unary-success-function-call-empty-arguments.json': { finish: 'tool_calls', text: null, calls: [['current_time', '{}']], usage: null },
  'vertexai/unary-success-function-call-json-literal.json': { finish: 'tool_calls', text: null, calls: [['functionName', '{"original_title":"String","current":true}']], usage: [774, 4176, 0, 0] },
  'vertexai/unary-success-function-call-mixed-content.json': {
    finish: 'tool_calls', text: txt(22, 'The sum of [1, 2,3] ', 'e sum of [1, 2,3] is'), calls: [['sum', '{"y":1,"x":2}'], ['sum', '{"y":3,"x":3}']], usage: null,
  },
  'vertexai/unary-success-function-call-no-arguments.json': { finish: 'tool_calls', text: null, calls: [['current_time', '{}']], usage: null },
  'vertexai/unary-success-function-call-null.json': { finish: 'tool_calls', text: null, calls: [['functionName', '{"original_title":"String","season":null}']], usage: [774, 4176, 0, 0] },
  'vertexai/unary-success-function-call-parallel-calls.json': {
    finish: 'tool_calls', text: null, calls: [['sum', '{"y":1,"x":2}'], ['sum', '{"y":3,"x":4}'], ['sum', '{"y":5,"x":6}']], usage: null,
  },
  'vertexai/unary-success-function-call-with-arguments.json': { finish: 'tool_calls', text: null, calls: [['sum', '{"y":5,"x":4}']], usage: null },
  'vertexai/unary-success-google-maps-grounding.json': { finish: 'stop', text: txt(3362, 'Here are some pizza ', 'd some great pizza!\n'), usage: [8, 1054, 0, 0] },
  'vertexai/unary-success-google-search-grounding.json': { finish: 'stop', text: txt(182, 'The current weather ', 'dity is around 41%.\n'), usage: [8, 60, 0, 0] },
  // Only an image part (generated image output has no chat form): no text.
  'vertexai/unary-success-image-invalid-safety-ratings.json': { finish: 'stop', text: null, usage: [15, 258, 0, 0] },
  'vertexai/unary-success-implicit-caching.json': { finish: 'stop', text: txt(60, 'Red Riding Hood is l', 'ons** in the forest.'), usage: [12013, 88, 11243, 73] },
  'vertexai/unary-success-including-severity.json': { finish: 'stop', text: txt(160, '## One Thousand and ', 'South Asian stories.'), usage: [11, 592, 0, 0] },
  // Parts but no finish reason: a complete unary answer.
  'vertexai/unary-success-missing-safety-ratings.json': { finish: 'stop', text: txt(30, 'This is the generate', 'e generated content.'), usage: null },
  'vertexai/unary-success-partial-usage-metadata.json': { finish: 'stop', text: txt(40, 'Mountain View, Calif', 'ornia, United States'), usage: [6, 0, 0, 0] },
  'vertexai/unary-success-quote-reply.json': { finish: 'stop', text: txt(104, "Google's mission is ", 'essible and useful."'), usage: null },
  'vertexai/unary-success-thinking-reply-thought-summary.json': { finish: 'stop', text: txt(13, 'Mountain View', 'Mountain View'), thinking: 253, usage: [13, 41, 0, 39] },
  'vertexai/unary-success-unknown-enum-safety-ratings.json': { finish: 'stop', text: txt(9, 'Some text', 'Some text'), usage: null },
  'vertexai/unary-success-url-context-missing-retrievedurl.json': { finish: 'stop', text: txt(492, 'I attempted to acces', 'ual active websites.'), usage: [235, 329, 0, 236] },
  'vertexai/unary-success-url-context-mixed-validity.json': { finish: 'stop', text: txt(1855, 'The `browse` tool ou', 'ts paywalled status.'), usage: [293, 625, 0, 179] },
  'vertexai/unary-success-url-context.json': { finish: 'stop', text: txt(567, 'The Berkshire Hathaw', 'ion on common stock.'), usage: [47, 134, 0, 36] },
  'vertexai/unary-success-usage-metadata.json': { finish: 'stop', text: txt(40, 'Mountain View, Calif', 'ornia, United States'), usage: [6, 357, 0, 0] },
};

export const STREAMS: Record<string, Expected> = {
  'googleai/streaming-failure-image-rejected.txt': { http: 400, kind: 'bad_request' },
  'googleai/streaming-failure-prompt-blocked-safety.txt': BLOCKED,
  'googleai/streaming-failure-recitation-no-content.txt': { finish: 'content_filter', text: txt(40, 'text1text2text3text4', 'text5text6text7text8'), model: 'gemini-2.0-flash', usage: [9, 261, 0, 0] },
  'googleai/streaming-success-basic-reply-long.txt': { finish: 'stop', text: txt(8845, "Okay, let's dive int", ' health conditions.\n'), model: 'gemini-2.0-flash', usage: [10, 1996, 0, 0] },
  'googleai/streaming-success-basic-reply-short.txt': { finish: 'stop', text: txt(40, 'The capital of Wyomi', 'ng is **Cheyenne**.\n'), model: 'gemini-2.0-flash', usage: [7, 10, 0, 0] },
  'googleai/streaming-success-citations.txt': { finish: 'stop', text: txt(6711, "Okay, let's break do", 'r learning journey!\n'), model: 'gemini-2.0-flash', usage: [15, 1381, 0, 0] },
  'googleai/streaming-success-code-execution.txt': { finish: 'stop', text: txt(228, 'To find the sum of t', 'prime numbers is 28.'), id: 'RUy4aObyJcTujrEPqtKYKQ', model: 'gemini-2.5-flash', usage: [264, 221, 0, 95] },
  'googleai/streaming-success-empty-parts.txt': { finish: 'stop', text: txt(66, "Here's a cute cartoo", 'll of yarn for you! '), id: 'kLewaKa5ONqI-8YP-c_NuAQ', model: 'gemini-2.5-flash-image-preview', usage: [16, 1307, 0, 0] },
  'googleai/streaming-success-finish-message.txt': { finish: 'stop', text: txt(12, 'Hello world!', 'Hello world!'), model: 'gemini-2.0-flash', usage: null },
  'googleai/streaming-success-no-content-parts.txt': { finish: 'stop', text: txt(419, 'I will generate a 3D', 'ightly cloudy sky.\n\n'), model: 'gemini-2.0-flash-preview-image-generation', usage: [34, 1370, 0, 0] },
  'googleai/streaming-success-thinking-function-call-thought-summary-signature.txt': {
    finish: 'tool_calls', text: txt(0, '', ''), thinking: 765, calls: [['now', '{}']], id: '48SHaPHpHKbG-8YPtZCawAk', model: 'gemini-2.5-flash', usage: [38, 174, 0, 168],
  },
  'googleai/streaming-success-thinking-reply-thought-summary.txt': {
    finish: 'stop', text: txt(263, 'The sky is blue beca', 'ar blue to our eyes.'), thinking: 1133, id: '0J-HaJetAqv0jrEPwu-tsQ0', model: 'gemini-2.5-flash', usage: [10, 588, 0, 540],
  },
  'googleai/streaming-success-url-context.txt': { finish: 'stop', text: txt(361, '\nThe Google homepage', ' an "About" section.'), id: 'IJLJaPGIL7uN1MkPvI6K0QQ', model: 'gemini-2.5-flash', usage: [1057, 120, 0, 39] },
  'vertexai/streaming-failure-api-key.txt': { http: 400, kind: 'auth' },
  // A candidate with empty content and no finish reason, then the end: the stream never finished.
  'vertexai/streaming-failure-empty-content.txt': { error: 'stream_broken' },
  // Two chunks, then Google's raw JSON error (CANCELLED) appended unframed: the text flowed, then the failure.
  'vertexai/streaming-failure-error-mid-stream.txt': { error: 'server_error', text: txt(13, 'First Second ', 'First Second ') },
  'vertexai/streaming-failure-finish-reason-safety.txt': { finish: 'content_filter', text: txt(10, '<redacted>', '<redacted>'), model: 'gemini-1.5-flash', usage: [10, 66, 0, 0] },
  'vertexai/streaming-failure-http-error.txt': { http: 400, kind: 'auth' },
  'vertexai/streaming-failure-image-rejected.txt': { http: 400, kind: 'bad_request' },
  'vertexai/streaming-failure-invalid-json.txt': { error: 'stream_broken' },
  'vertexai/streaming-failure-malformed-content.txt': { error: 'stream_broken' },
  'vertexai/streaming-failure-prompt-blocked-safety-with-message.txt': BLOCKED,
  'vertexai/streaming-failure-prompt-blocked-safety.txt': BLOCKED,
  // Vertex repeats STOP on every chunk; the last chunk's RECITATION is the one that counts.
  'vertexai/streaming-failure-recitation-no-content.txt': { finish: 'content_filter', text: txt(47, 'Copyrighted text goe', 'ore copyrighted text'), usage: null },
  'vertexai/streaming-failure-unknown-finish-enum.txt': { finish: 'stop', text: txt(3285, '**Cats:**\n\n- **Physi', 'lth issues early on.'), usage: null },
  'vertexai/streaming-failure-unknown-model.txt': { http: 404, kind: 'not_found' },
  'vertexai/streaming-success-basic-reply-long.txt': { finish: 'stop', text: txt(136, "Okay, let's brew a d", ' coffee in no time.\n'), id: 'By4ZaNWAEPKQhMIP4KS3oAc', model: 'gemini-2.0-flash', usage: [12, 1706, 0, 0] },
  'vertexai/streaming-success-basic-reply-parts.txt': { finish: 'stop', text: txt(15, '1 2 3 4 5 6 7 8', '1 2 3 4 5 6 7 8'), usage: [6, 326, 0, 0] },
  'vertexai/streaming-success-basic-reply-short.txt': { finish: 'stop', text: txt(8, 'Cheyenne', 'Cheyenne'), usage: [6, 4, 0, 0] },
  'vertexai/streaming-success-citations.txt': { finish: 'stop', text: txt(2413, '1. **Definition:**\nQ', 'cs (YouTube Channel)'), usage: null },
  'vertexai/streaming-success-code-execution.txt': { finish: 'stop', text: txt(370, 'To find the sum of t', '5, 7, and 11) is 28.'), id: '80y4aM16taeo5g_9-eKJDA', model: 'gemini-2.5-flash', usage: [581, 384, 0, 192] },
  'vertexai/streaming-success-empty-text-part.txt': { finish: 'stop', text: txt(1, '1', '1'), usage: [8, 1, 0, 0] },
  'vertexai/streaming-success-function-call-short.txt': { finish: 'tool_calls', text: txt(0, '', ''), calls: [['getTemperature', '{"city":"San Jose"}']], usage: null },
  'vertexai/streaming-success-image-invalid-safety-ratings.txt': { finish: 'stop', text: txt(0, '', ''), id: 'p8MTaMOVKoiUhMIPqu3o2Qc', model: 'gemini-2.0-flash-exp', usage: [15, 258, 0, 0] },
  // Recorded without any finishReason: to the gateway a stream that never says it finished is broken (the
  // text still reaches the client first).
  'vertexai/streaming-success-quotes-escaped.txt': { error: 'stream_broken', text: txt(273, ' Pineapples and "ban', 'ow on banana plants.') },
  'vertexai/streaming-success-thinking-reply-thought-summary.txt': {
    finish: 'stop', text: txt(607, 'The sky is blue due ', ' sensitive to blue).'), thinking: 1547, id: 'J5-HaL6iL9OVhMIPkuG6iA8', model: 'gemini-2.5-flash', usage: [9, 1201, 0, 1067],
  },
  'vertexai/streaming-success-unknown-safety-enum.txt': { finish: 'stop', text: txt(3285, '**Cats:**\n\n- **Physi', 'lth issues early on.'), usage: null },
  'vertexai/streaming-success-url-context.txt': { finish: 'stop', text: txt(268, 'The Google homepage ', 'rtising information.'), id: 'Z5XJaKzrBf2UsbQPxv3GmQ0', model: 'gemini-2.5-flash', usage: [57, 48, 0, 0] },
  'vertexai/streaming-success-utf8.txt': { finish: 'stop', text: txt(225, '秋风瑟瑟，叶落纷纷，\n西风残照，寒霜渐浓', '美景，\n感受秋天的气息，领悟秋天的哲理。'), usage: null },
};
