// serve/api.h: the error table, request schemas (OpenAI, TEI, ours), and response writers.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve/api.h"

namespace dialtree::serve {
namespace {

using json = nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;

/// The ApiError a call throws (kind, message, param), or fails the test.
template <class F>
ApiError error_of(F f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError thrown";
  return ApiError(ErrorKind::kInternal, "none");
}

TEST(ErrorTable, EveryKindHasItsDocumentedStatusTypeAndCode) {
  struct Row {
    ErrorKind kind;
    int status;
    const char* type;
    const char* code;
  };
  // The table of docs/serving.md "Errors", written out independently of serve/api.cpp.
  const std::vector<Row> expected = {
      {ErrorKind::kBadRequest, 400, "invalid_request_error", "bad_request"},
      {ErrorKind::kInvalidJson, 400, "invalid_request_error", "invalid_json"},
      {ErrorKind::kInvalidUtf8, 400, "invalid_request_error", "invalid_utf8"},
      {ErrorKind::kEmptyInput, 400, "invalid_request_error", "empty_input"},
      {ErrorKind::kUnauthorized, 401, "authentication_error", "invalid_api_key"},
      {ErrorKind::kNotFound, 404, "not_found_error", "not_found"},
      {ErrorKind::kMethodNotAllowed, 405, "invalid_request_error", "method_not_allowed"},
      {ErrorKind::kRequestTimeout, 408, "invalid_request_error", "request_timeout"},
      {ErrorKind::kPayloadTooLarge, 413, "invalid_request_error", "payload_too_large"},
      {ErrorKind::kInputTooLong, 413, "invalid_request_error", "input_too_long"},
      {ErrorKind::kTooManyInputs, 413, "invalid_request_error", "too_many_inputs"},
      {ErrorKind::kUriTooLong, 414, "invalid_request_error", "uri_too_long"},
      {ErrorKind::kUnsupportedMediaType, 415, "invalid_request_error", "unsupported_media_type"},
      {ErrorKind::kHeaderTooLarge, 431, "invalid_request_error", "header_too_large"},
      {ErrorKind::kValidation, 422, "invalid_request_error", "validation_error"},
      {ErrorKind::kNoClassifier, 424, "invalid_request_error", "no_classifier"},
      {ErrorKind::kNoTagger, 424, "invalid_request_error", "no_tagger"},
      {ErrorKind::kOverloaded, 429, "rate_limit_error", "overloaded"},
      {ErrorKind::kInternal, 500, "server_error", "internal_error"},
      {ErrorKind::kNotImplemented, 501, "invalid_request_error", "not_implemented"},
      {ErrorKind::kUnavailable, 503, "service_unavailable_error", "unavailable"},
  };
  ASSERT_EQ(all_error_kinds().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Row& r = expected[i];
    EXPECT_EQ(all_error_kinds()[i], r.kind) << i;
    EXPECT_EQ(http_status(r.kind), r.status) << r.code;
    EXPECT_EQ(error_type(r.kind), r.type) << r.code;
    EXPECT_EQ(error_code(r.kind), r.code);
  }
}

TEST(ErrorTable, BodyIsOpenAisNestedShapeAndAlwaysValidUtf8) {
  const json j =
      json::parse(error_body(ApiError(ErrorKind::kValidation, "input[1]: bad", "input[1]")));
  EXPECT_EQ(j, json::parse(R"({"error":{"message":"input[1]: bad","type":"invalid_request_error",
                                        "code":"validation_error","param":"input[1]"}})"));
  const json none = json::parse(error_body(ApiError(ErrorKind::kOverloaded, "busy")));
  EXPECT_TRUE(none["error"]["param"].is_null());
  // A message echoing invalid bytes still gives a parseable body (C25).
  const std::string body = error_body(ApiError(ErrorKind::kInvalidUtf8, "caf\xC3 x", "caf\xC3"));
  const json bad = json::parse(body);
  EXPECT_EQ(bad["error"]["message"], "caf\xEF\xBF\xBD x");
}

TEST(ParseBody, SyntaxErrorsInvalidUtf8AndNonObjects) {
  const ApiError cut = error_of([] { parse_body("{\"inputs\": "); });
  EXPECT_EQ(cut.kind(), ErrorKind::kInvalidJson);
  // Without nlohmann's "[json.exception.parse_error.101] " tag (break test, 2026-12-04).
  EXPECT_EQ(std::string(cut.what())
                .rfind("request body is not JSON: parse error at line 1, "
                       "column 12: syntax error",
                       0),
            0u)
      << cut.what();
  const ApiError utf = error_of([] { parse_body("{\"inputs\":\"caf\xC3\"}"); });
  EXPECT_EQ(utf.kind(), ErrorKind::kInvalidUtf8);
  EXPECT_THAT(utf.what(), HasSubstr("offset 14"));
  EXPECT_EQ(error_of([] { parse_body("[1,2]"); }).kind(), ErrorKind::kValidation);
  // A body that is not an object has no field at fault: `param` is null (empty here).
  const ApiError list = error_of([] { parse_classify(json::parse("[1,2]")); });
  EXPECT_EQ(list.param(), "");
  EXPECT_STREQ(list.what(), "the request body: expected a JSON object, found array");
  EXPECT_EQ(parse_body(R"({"inputs":"x"})")["inputs"], "x");
  // An escaped lone surrogate is invalid UTF-16 inside valid UTF-8 bytes: a JSON error.
  EXPECT_EQ(error_of([] { parse_body(R"({"inputs":"\udc00"})"); }).kind(), ErrorKind::kInvalidJson);
  // A number beyond double's range is a JSON error too (400), not an internal one (500).
  const ApiError overflow = error_of([] { parse_body(R"({"inputs":[[1e400]]})"); });
  EXPECT_EQ(overflow.kind(), ErrorKind::kInvalidJson);
  // Its exception names no place: the offset of the number's first byte is added.
  EXPECT_THAT(overflow.what(), AllOf(HasSubstr("1e400"), HasSubstr("(at offset 12)")));
}

TEST(Inputs, StringsDialogsAndTokenIdsInEveryShape) {
  auto r = parse_openai_embeddings(json::parse(R"({"input":"lost my card","model":"m"})"));
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].turns.size(), 1u);
  EXPECT_EQ(r.inputs[0].turns[0].role, "user");
  EXPECT_EQ(r.inputs[0].turns[0].text, "lost my card");
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.normalize);

  r = parse_openai_embeddings(json::parse(R"({"input":["a","b",[9,10],
      {"turns":[{"role":"assistant","text":"how can i help"},{"role":"user","text":"my card"}]}]})"));
  ASSERT_EQ(r.inputs.size(), 4u);
  EXPECT_EQ(r.inputs[1].turns[0].text, "b");
  ASSERT_TRUE(r.inputs[2].token_ids.has_value());
  EXPECT_EQ(*r.inputs[2].token_ids, (std::vector<std::int64_t>{9, 10}));
  ASSERT_EQ(r.inputs[3].turns.size(), 2u);
  EXPECT_EQ(r.inputs[3].turns[0].role, "system");  // assistant is the system side
  EXPECT_EQ(r.inputs[3].turns[1].text, "my card");

  // A flat array of integers is one token-id input (OpenAI).
  r = parse_openai_embeddings(json::parse(R"({"input":[5,6,7]})"));
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].token_ids->size(), 3u);

  // A bare dialog object is one input.
  const auto t =
      parse_tei_embed(json::parse(R"({"inputs":{"turns":[{"role":"user","text":"x"}]}})"));
  ASSERT_EQ(t.inputs.size(), 1u);
  EXPECT_EQ(t.inputs[0].turns[0].text, "x");
}

TEST(Inputs, EmptyInputsAre400NotAnythingElse) {  // docs/failure-cases.md C19
  for (const char* body : {R"({"inputs":[]})", R"({"inputs":""})", R"({"inputs":["a",""]})",
                           R"({"inputs":{"turns":[]}})", R"({"inputs":[[]]})",
                           R"({"inputs":{"turns":[{"role":"user","text":""}]}})"}) {
    const ApiError e = error_of([&] { parse_tei_embed(json::parse(body)); });
    EXPECT_EQ(e.kind(), ErrorKind::kEmptyInput) << body;
    EXPECT_EQ(http_status(e.kind()), 400);
  }
  EXPECT_EQ(error_of([] { parse_openai_embeddings(json::parse(R"({"input":[]})")); }).param(),
            "input");
  EXPECT_EQ(error_of([] { parse_tei_embed(json::parse(R"({"inputs":["a",""]})")); }).param(),
            "inputs[1]");
}

TEST(Inputs, WrongTypesAre422NamingTheField) {
  struct Case {
    const char* body;
    const char* param;
    const char* says;
  };
  const std::vector<Case> cases = {
      {R"({"inputs":3})", "inputs", "found integer"},
      {R"({})", "inputs", "missing"},
      {R"({"inputs":["a",{"text":"b"}]})", "inputs[1].text", "unknown key"},
      {R"({"inputs":{"turns":[{"role":"bot","text":"b"}]}})", "inputs.turns[0].role", "role must"},
      {R"({"inputs":{"turns":[{"text":"b"}]}})", "inputs.turns[0].role", "missing"},
      {R"({"inputs":{"turns":[{"role":"user","text":5}]}})", "inputs.turns[0].text",
       "found integer"},
      {R"({"inputs":[1,"a"]})", "inputs[1]", "an integer token id"},
      {R"({"inputs":[-1]})", "inputs[0]", ">= 0"},
      {R"({"inputs":"a","normalize":"yes"})", "normalize", "a boolean"},
      {R"({"inputs":"a","truncate":1})", "truncate", "a boolean"},
      {R"({"inputs":"a","truncation_direction":"middle"})", "truncation_direction", "right"},
      {R"({"inputs":"a","dimensions":0})", "dimensions", ">= 1"},
      {R"({"inputs":"a","dimensions":2.5})", "dimensions", "found number"},
      {R"({"inputs":"a","prompt_name":"query"})", "prompt_name", "no prompts"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of([&] { parse_tei_embed(json::parse(c.body)); });
    EXPECT_EQ(e.kind(), ErrorKind::kValidation) << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body;
    EXPECT_THAT(e.what(), HasSubstr(c.says)) << c.body;
  }
  const ApiError fmt = error_of(
      [] { parse_openai_embeddings(json::parse(R"({"input":"a","encoding_format":"hex"})")); });
  EXPECT_EQ(fmt.param(), "encoding_format");
  EXPECT_EQ(error_of([] { parse_classify(json::parse(R"({"inputs":"a","top_k":0})")); }).param(),
            "top_k");
  EXPECT_EQ(error_of([] {
              parse_tokenize(json::parse(R"({"inputs":"a","add_special_tokens":0})"));
            }).param(),
            "add_special_tokens");
}

TEST(Inputs, OptionsAndDefaults) {
  const auto t = parse_tei_embed(json::parse(
      R"({"inputs":"a","normalize":false,"truncate":false,"truncation_direction":"Left","dimensions":8})"));
  EXPECT_FALSE(t.normalize);
  EXPECT_EQ(t.truncate, false);
  EXPECT_EQ(t.truncation_direction, TruncationDirection::kLeft);
  EXPECT_EQ(t.dimensions, 8);
  const auto d = parse_tei_embed(json::parse(R"({"inputs":"a","truncate":null})"));
  EXPECT_FALSE(d.truncate.has_value());
  EXPECT_EQ(d.truncation_direction, TruncationDirection::kRight);
  const auto o = parse_openai_embeddings(
      json::parse(R"({"input":"a","encoding_format":"base64","user":"u1","extra":1})"));
  EXPECT_TRUE(o.base64);
  EXPECT_EQ(parse_classify(json::parse(R"({"inputs":"a"})")).top_k, 1);
  EXPECT_TRUE(parse_tokenize(json::parse(R"({"inputs":"a"})")).add_special_tokens);
}

TEST(Parse, RequestsTextOrInputsNeverTokenIds) {
  const ParseRequest rasa = parse_parse(json::parse(R"({"text":"book 2","message_id":"x"})"));
  EXPECT_TRUE(rasa.single);
  ASSERT_EQ(rasa.inputs.size(), 1u);
  EXPECT_EQ(rasa.inputs[0].turns[0].text, "book 2");
  EXPECT_EQ(rasa.top_k, 1);
  const ParseRequest list = parse_parse(json::parse(
      R"({"inputs":["a",{"turns":[{"role":"user","text":"b"}]}],"top_k":3,"truncate":true})"));
  EXPECT_FALSE(list.single);
  EXPECT_EQ(list.inputs.size(), 2u);
  EXPECT_EQ(list.top_k, 3);
  EXPECT_EQ(list.truncate, true);
  ApiError both = error_of([] { parse_parse(json::parse(R"({"text":"a","inputs":"b"})")); });
  EXPECT_EQ(both.kind(), ErrorKind::kValidation);
  EXPECT_EQ(both.param(), "text");
  ApiError ids = error_of([] { parse_parse(json::parse(R"({"inputs":["a",[5,6]]})")); });
  EXPECT_EQ(ids.kind(), ErrorKind::kValidation);
  EXPECT_EQ(ids.param(), "inputs[1]");
  EXPECT_EQ(error_of([] { parse_parse(json::parse(R"({"text":7})")); }).param(), "text");
  EXPECT_EQ(error_of([] { parse_parse(json::parse(R"({"text":""})")); }).kind(),
            ErrorKind::kEmptyInput);
  // Neither field: the message names both, for a Rasa client that never sends `inputs`.
  ApiError none = error_of([] { parse_parse(json::parse("{}")); });
  EXPECT_EQ(none.kind(), ErrorKind::kValidation);
  EXPECT_EQ(none.param(), "inputs");
  EXPECT_STREQ(none.what(),
               "inputs: missing (give `inputs`, or `text` as Rasa's /model/parse takes)");
}

TEST(Parse, ResultSpansOffsetsConfidenceAndIntentsKnownAnswer) {
  ParsedTurn t;
  t.text = "caf\u00e9 for 4 people at 7 pm";
  t.words = {{"caf\u00e9", 0, 4}, {"for", 5, 8},   {"4", 9, 10}, {"people", 11, 17},
             {"at", 18, 20},        {"7", 21, 22}, {"pm", 23, 25}};
  t.tags = {"B-restaurant", "O", "B-people", "I-people", "I-time", "B-time", "I-time"};
  t.tag_scores = {0.9f, 1.0f, 0.8f, 0.6f, 0.99f, 0.7f, 0.95f};
  const json r = parse_result(t, {0.25f, 0.75f}, {"book", "cancel"}, 5);
  EXPECT_EQ(r["text"], t.text);
  EXPECT_EQ(r["intent"], json::parse(R"({"name":"cancel","confidence":0.75})"));
  ASSERT_EQ(r["intent_ranking"].size(), 2u);  // top_k clamped to the intents
  EXPECT_EQ(r["intent_ranking"][1]["name"], "book");
  ASSERT_EQ(r["entities"].size(), 3u);  // the I-time after O opens nothing (DialoGLUE's rule)
  EXPECT_EQ(r["entities"][0]["value"], "caf\u00e9");
  EXPECT_EQ(r["entities"][0]["end"], 4);  // code points, not bytes
  EXPECT_EQ(r["entities"][1], json::parse(R"({"entity":"people","start":9,"end":17,
      "value":"4 people","confidence_entity":0.6000000238418579,
      "confidence":0.6000000238418579,"words":[2,4]})"));
  EXPECT_EQ(r["entities"][2]["value"], "7 pm");
  EXPECT_FLOAT_EQ(r["entities"][2]["confidence_entity"].get<float>(), 0.7f);
  // No intent head: intent null, an empty ranking.
  const json plain = parse_result(t, {}, {}, 1);
  EXPECT_TRUE(plain["intent"].is_null());
  EXPECT_TRUE(plain["intent_ranking"].empty());
  t.tags.pop_back();
  EXPECT_THROW(parse_result(t, {}, {}, 1), std::invalid_argument);
}

TEST(Embedding, NormaliseAndMatryoshkaCutKnownAnswers) {
  const auto unit = finish_embedding({3.0f, 4.0f, 12.0f}, std::nullopt, true);
  EXPECT_FLOAT_EQ(unit[0], 3.0f / 13.0f);
  EXPECT_FLOAT_EQ(unit[2], 12.0f / 13.0f);
  const auto cut = finish_embedding({3.0f, 4.0f, 12.0f}, 2, true);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_FLOAT_EQ(cut[0], 0.6f);
  EXPECT_FLOAT_EQ(cut[1], 0.8f);
  EXPECT_EQ(finish_embedding({3.0f, 4.0f}, std::nullopt, false), (std::vector<float>{3.0f, 4.0f}));
  // C21: a zero vector stays zero; a tiny one (squares underflow in fp16) still normalises.
  EXPECT_EQ(finish_embedding({0.0f, 0.0f}, std::nullopt, true), (std::vector<float>{0.0f, 0.0f}));
  const auto tiny = finish_embedding({1e-4f, 1e-4f}, std::nullopt, true);
  EXPECT_NEAR(tiny[0], std::sqrt(0.5f), 1e-6);
  EXPECT_EQ(error_of([] { finish_embedding({1.0f}, 2, true); }).param(), "dimensions");
}

TEST(Writers, FloatsRoundTripBase64KnownAnswerAndResponseShapes) {
  std::string s;
  const std::vector<float> v = {1.0f, -0.1f, 3.4028235e38f, 1e-45f,
                                std::numeric_limits<float>::quiet_NaN()};
  append_float_array(s, v.data(), v.size());
  EXPECT_EQ(s, "[1,-0.1,3.4028235e+38,1e-45,null]");
  const json back = json::parse(s);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(back[i].get<float>(), v[i]);

  // 1.0f = 00 00 80 3F little-endian; 2.0f = 00 00 00 40.
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  EXPECT_EQ(base64_floats({1.0f, 2.0f}), "AACAPwAAAEA=");
  EXPECT_EQ(base64_floats({1.0f, 2.0f, -2.0f}), "AACAPwAAAEAAAADA");

  const json o = json::parse(openai_embeddings_body({{0.5f, 1.0f}, {2.0f, 0.0f}}, false, "m", 7));
  EXPECT_EQ(o, json::parse(R"({"object":"list","data":[
      {"object":"embedding","index":0,"embedding":[0.5,1]},
      {"object":"embedding","index":1,"embedding":[2,0]}],
      "model":"m","usage":{"prompt_tokens":7,"total_tokens":7}})"));
  const json b = json::parse(openai_embeddings_body({{1.0f}}, true, "m", 3));
  EXPECT_EQ(b["data"][0]["embedding"], "AACAPw==");
  EXPECT_EQ(json::parse(tei_embed_body({{1.5f}})), json::parse("[[1.5]]"));
}

}  // namespace
}  // namespace dialtree::serve
