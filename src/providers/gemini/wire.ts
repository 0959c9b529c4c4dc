/** Gemini API (generateContent) wire types: the parts the adapter writes and reads (https://ai.google.dev/api/generate-content). */

export interface GPart {
  text?: string;
  /** The part is a thought summary, not answer text. */
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { name: string; args?: Record<string, unknown> | null; id?: string };
  functionResponse?: { name: string; response: Record<string, unknown> };
  // executableCode, codeExecutionResult, … (built-in tools the gateway never enables) are read and skipped.
  [other: string]: unknown;
}

export interface GContent {
  role?: 'user' | 'model';
  parts?: GPart[];
}

export interface GFunctionDeclaration {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

export interface GRequest {
  contents: GContent[];
  systemInstruction?: GContent;
  tools?: Array<{ functionDeclarations: GFunctionDeclaration[] }>;
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'NONE' | 'ANY'; allowedFunctionNames?: string[] } };
  generationConfig?: GGenerationConfig;
}

export interface GGenerationConfig {
  temperature?: number;
  topP?: number;
  topK?: number;
  maxOutputTokens?: number;
  stopSequences?: string[];
  candidateCount?: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseMimeType?: string;
  responseSchema?: Record<string, unknown>;
  thinkingConfig?: { thinkingBudget: number; includeThoughts?: boolean };
}

export interface GCandidate {
  content?: GContent;
  finishReason?: string;
  finishMessage?: string;
  index?: number;
}

export interface GUsageMetadata {
  /** Includes cached tokens. */
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  /** Prompt tokens of built-in tool use (URL context, search): billed as input. */
  toolUsePromptTokenCount?: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
  totalTokenCount?: number;
}

export interface GResponse {
  candidates?: GCandidate[];
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string };
  usageMetadata?: GUsageMetadata;
  modelVersion?: string;
  responseId?: string;
}

/** Google's error body (`{error:{code,message,status,details}}`), also seen inside a failing stream. */
export interface GError {
  code?: number;
  message?: string;
  status?: string;
  details?: Array<Record<string, unknown>>;
}
