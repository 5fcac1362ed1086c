// tests/engine/exec/test_speculative.cpp — speculative decoding (engine/exec/speculative.h): the
// prompt-lookup drafter's guesses, the pacer, a pass's every-row logits against one-token passes
// bit for bit, and the text with speculation (prompt lookup, a draft model that agrees, a draft
// model that mostly does not) equal to the text without it, greedy and seeded, through generate()
// and through the Scheduler with several requests at once.
#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "engine/backend/cpu/cpu_device.h"
#include "engine/exec/generate.h"
#include "engine/exec/scheduler.h"
#include "engine/exec/session.h"
#include "engine/exec/speculative.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/random_model.h"
#include "test_support.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using exec::DraftMode;

TEST(LookupDraft, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  // The tail "7 8" occurred at 1 and at 5; the latest (5) is followed by 9 4.
  const std::vector<int32_t> c = {3, 7, 8, 1, 2, 7, 8, 9, 4, 7, 8};
  EXPECT_EQ(exec::lookup_draft(c, 8), (std::vector<int32_t>{9, 4, 7, 8}));
  EXPECT_EQ(exec::lookup_draft(c, 2), (std::vector<int32_t>{9, 4}));
  // A longer n-gram wins over a later shorter one: "1 2 3" matches at 0, "2 3" also at 6.
  const std::vector<int32_t> d = {1, 2, 3, 10, 11, 0, 2, 3, 20, 1, 2, 3};
  EXPECT_EQ(exec::lookup_draft(d, 3), (std::vector<int32_t>{10, 11, 0}));
  // No bigram repeats: nothing (unigrams are below the default minimum of 2).
  EXPECT_TRUE(exec::lookup_draft(std::vector<int32_t>{1, 2, 3, 4, 1}, 8).empty());
  EXPECT_EQ(exec::lookup_draft(std::vector<int32_t>{1, 2, 3, 4, 1}, 8, 4, 1), (std::vector<int32_t>{2, 3, 4, 1}));
  EXPECT_TRUE(exec::lookup_draft(std::vector<int32_t>{}, 8).empty());
  EXPECT_TRUE(exec::lookup_draft(std::vector<int32_t>{5}, 8).empty());
  EXPECT_TRUE(exec::lookup_draft(c, 0).empty());
  // The match behind a draft: the n-gram, and further back as long as the tokens agree.
  int32_t match = -1;
  EXPECT_EQ(exec::lookup_draft(c, 8, 4, 2, &match).size(), 4u);
  EXPECT_EQ(match, 2);  // "2 | 7 8" against "4 | 7 8"
  EXPECT_EQ(exec::lookup_draft(d, 8, 4, 2, &match).size(), 8u);
  EXPECT_EQ(match, 3);  // the occurrence starts the context
  const std::vector<int32_t> e = {0, 5, 6, 7, 8, 9, 0, 5, 6, 7, 8};
  EXPECT_EQ(exec::lookup_draft(e, 8, 4, 2, &match), (std::vector<int32_t>{9, 0, 5, 6, 7, 8}));
  EXPECT_EQ(match, 5);  // "0 5 6 7 8" twice
  EXPECT_TRUE(exec::lookup_draft(std::vector<int32_t>{1, 2, 3, 4, 1}, 8, 4, 2, &match).empty());
  EXPECT_EQ(match, 0);
  EXPECT_DOUBLE_EQ(exec::lookup_acceptance(2), 0.5);
  EXPECT_DOUBLE_EQ(exec::lookup_acceptance(16), 16.0 / 18.0);
  EXPECT_DOUBLE_EQ(exec::lookup_acceptance(0), 0.0);
}

TEST(PassCosts, MeasuredInterpolatedOrGuessed) {
  exec::PassCosts c;
  EXPECT_EQ(c.estimate(3), 0.0);  // nothing measured
  c.observe(1, 10);
  c.observe(9, 30);
  EXPECT_TRUE(c.measured(1));
  EXPECT_FALSE(c.measured(5));
  EXPECT_DOUBLE_EQ(c.estimate(1), 10);
  EXPECT_DOUBLE_EQ(c.estimate(5), 20);         // halfway between 1 and 9
  EXPECT_DOUBLE_EQ(c.estimate(11), 30 * 1.3);  // past the last: +15% of it a row
  c.observe(9, 40);                            // an exponential average: half old, half new
  EXPECT_DOUBLE_EQ(c.estimate(9), 35);
  exec::PassCosts above;
  above.observe(9, 23);
  EXPECT_DOUBLE_EQ(above.estimate(1), 23 / 2.2);  // below the first: -15% of it a row
  c.observe(0, 5);                                // out of range: ignored
  c.observe(65, 5);
  c.observe(3, -1);
  EXPECT_FALSE(c.measured(3));
}

TEST(DraftPacer, DraftsWhatPaysAtTheMeasuredCosts) {
  // Nothing measured yet: the first step drafts the most, which measures it; then a plain step
  // measures what it is weighed against.
  exec::PassCosts costs;
  exec::DraftPacer p;
  EXPECT_EQ(p.length(8, costs), 8);
  costs.observe(9, 30);
  EXPECT_EQ(p.length(8, costs), 0);

  // Rows nearly free (a GPU reading its weights once): guessing at the prior's even odds pays; the
  // best k is 5 (expected tokens 2 - 0.5^k over 10 + k / 8 ms: 0.1853 a ms at 5, 0.1815 at 8).
  exec::PassCosts flat;
  flat.observe(1, 10);
  flat.observe(9, 11);
  EXPECT_EQ(exec::DraftPacer().length(8, flat), 5);
  // On a CPU a row costs: even odds do not pay, guesses that are mostly taken do.
  exec::PassCosts cpu;
  cpu.observe(1, 10);
  cpu.observe(2, 18);
  cpu.observe(4, 25);
  cpu.observe(9, 33);
  exec::DraftPacer q;
  EXPECT_DOUBLE_EQ(q.acceptance(), 0.5);
  EXPECT_EQ(q.length(8, cpu), 0);
  q.record(8, 8);  // every guess taken: (8 + 0.5) / (8 + 1)
  EXPECT_NEAR(q.acceptance(), 8.5 / 9.0, 1e-12);
  EXPECT_EQ(q.length(8, cpu), 8);
  EXPECT_EQ(q.length(3, cpu), 3);  // the request's maximum
  // Rows beside it (other sequences' tokens) are priced too: on a pass of 4 rows, 5 guesses (to
  // 9 rows, 4.88 tokens over 33 ms) pay best; past 9 rows each costs 15% of a pass more.
  EXPECT_EQ(q.length(8, cpu, 3), 5);
  // A drafter's hint lifts a fresh sequence's odds: a 16-token lookup match drafts 8 at these costs,
  // a 2-token one (even odds) nothing.
  exec::DraftPacer h;
  EXPECT_EQ(h.length(8, cpu, 0, exec::lookup_acceptance(16)), 8);
  EXPECT_EQ(h.length(8, cpu, 0, exec::lookup_acceptance(2)), 0);
  // Misses bring it back to plain steps ...
  for (int i = 0; i < 8; ++i) q.record(8, 0);
  EXPECT_LT(q.acceptance(), 0.3);
  EXPECT_EQ(q.length(8, cpu), 0);
  // ... where the prior does not pay here either, so a sequence tries once after 16 plain steps in
  // a row; each draft that fails doubles that wait (here the misses above took it to 1024), a taken
  // guess makes it 16 again.
  exec::DraftPacer r;
  int zeros = 0;
  while (r.length(8, cpu) == 0) ++zeros;
  EXPECT_EQ(zeros, 15);  // the 16th step tries
  r.record(8, 0);
  zeros = 0;
  while (r.length(8, cpu) == 0) ++zeros;
  EXPECT_EQ(zeros, 31);
  r.record(8, 2);
  zeros = 0;
  while (r.length(8, cpu) == 0) ++zeros;
  EXPECT_EQ(zeros, 15);
  zeros = 0;
  while (q.length(8, cpu) == 0) ++zeros;
  EXPECT_EQ(zeros, 1022);  // the plain step asked above counts as one of the 1024
  q.reset();
  EXPECT_DOUBLE_EQ(q.acceptance(), 0.5);
}

std::unique_ptr<model::Model> load(const fs::path& path) {
  auto m = model::Model::load(path);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().to_string());
  return m.ok() ? std::move(*m) : nullptr;
}

// A random model with stories260K's vocabulary: a draft that mostly disagrees with the target.
fs::path random_draft() {
  const fs::path out = test::temp_dir("speculative") / "random-draft.gguf";
  if (fs::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.n_embd = 64;
  spec.n_layers = 2;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.n_ff = 128;
  spec.n_ctx = 512;
  spec.type = "f32";
  spec.stddev = 0.08f;
  spec.n_threads = 2;
  EXPECT_TRUE(model::write_random_model(spec, *vocab, out).ok());
  return out;
}

constexpr int64_t kCtx = 256;

std::vector<int32_t> encode(const model::Model& m, const std::string& text) {
  return m.tokenizer().encode(text, true, true);
}

TEST(SpeculativeEval, EveryRowHasTheBitsOfAOneTokenPass) {
  auto m = load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  kernels::ThreadPool pool(2);
  auto a = exec::Session::create(*m, pool, kCtx, 64);
  auto b = exec::Session::create(*m, pool, kCtx, 64);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<int32_t> prompt = encode(*m, "Once upon a time, there was a little girl named Lily.");
  ASSERT_TRUE((*a)->eval(prompt).ok());
  ASSERT_TRUE((*b)->eval(prompt).ok());
  // 20 rows: more than the head computes in one product (plan::head_rows), so it runs in pieces.
  std::vector<int32_t> more;
  for (int i = 0; i < 20; ++i) more.push_back(static_cast<int32_t>((37 * i + 11) % m->config().n_vocab));
  auto rows = (*a)->eval_all(more);
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  const size_t nv = static_cast<size_t>(m->config().n_vocab);
  const std::vector<float> all(*rows, *rows + more.size() * nv);
  for (size_t i = 0; i < more.size(); ++i) {
    auto one = (*b)->eval(std::span<const int32_t>(&more[i], 1));
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(std::memcmp(all.data() + i * nv, *one, nv * sizeof(float)), 0) << "row " << i;
  }
  // Cutting the cache back and evaluating again gives the same logits (truncate drops the rest).
  (*a)->truncate(static_cast<int64_t>(prompt.size()) + 5);
  auto again = (*a)->eval(std::span<const int32_t>(&more[5], 1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::memcmp(all.data() + 5 * nv, *again, nv * sizeof(float)), 0);
}

struct Outcome {
  std::vector<int32_t> tokens;
  exec::FinishReason finish = exec::FinishReason::Length;
  int64_t passes = 0, drafted = 0, accepted = 0;
};

Outcome generate(const model::Model& m, const std::string& prompt, const sample::SamplerParams& sampling,
             exec::SpeculativeParams spec, exec::DraftModel* draft, int64_t max_tokens = 120, int64_t max_batch = 64) {
  kernels::ThreadPool pool(2);
  auto session = exec::Session::create(m, pool, kCtx, max_batch);
  EXPECT_TRUE(session.ok());
  exec::GenerateOptions o;
  o.max_tokens = max_tokens;
  o.sampling = sampling;
  o.speculative = spec;
  o.draft = draft;
  auto r = exec::generate(**session, encode(m, prompt), o, nullptr);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r.ok()) return {};
  return {r->tokens, r->finish, r->target_passes, r->n_drafted, r->n_draft_accepted};
}

sample::SamplerParams greedy() {
  sample::SamplerParams s;
  s.temperature = 0;
  return s;
}
sample::SamplerParams seeded() {
  sample::SamplerParams s;
  s.temperature = 0.9f;
  s.top_k = 40;
  s.top_p = 0.95f;
  s.repeat_penalty = 1.1f;
  s.seed = 1234;
  return s;
}

const char* kPrompt = "Once upon a time, there was a little girl named Lily. Lily liked to play with her ball.";

TEST(Speculative, PromptLookupGivesThePlainTextGreedyAndSeeded) {
  auto m = load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  for (const sample::SamplerParams& s : {greedy(), seeded()}) {
    const Outcome plain = generate(*m, kPrompt, s, {}, nullptr);
    const Outcome spec = generate(*m, kPrompt, s, {DraftMode::Lookup, 8, false}, nullptr);
    // Adaptive: how much it drafts follows this machine's pass times; the text does not.
    const Outcome adaptive = generate(*m, kPrompt, s, {DraftMode::Lookup, 8, true}, nullptr);
    EXPECT_EQ(adaptive.tokens, plain.tokens);
    EXPECT_EQ(adaptive.passes + adaptive.accepted, plain.passes);
    ASSERT_GT(plain.tokens.size(), 40u);
    EXPECT_EQ(spec.tokens, plain.tokens) << "temperature " << s.temperature;
    EXPECT_EQ(spec.finish, plain.finish);
    EXPECT_EQ(plain.drafted, 0);
    EXPECT_EQ(plain.passes + 1, static_cast<int64_t>(plain.tokens.size()) + (plain.finish == exec::FinishReason::Length ? 0 : 1));
    // TinyStories text repeats its names and phrases: guesses are made, some are taken, and each
    // taken one is a pass saved (tokens = passes + 1 + accepted, the +1 the prompt's token).
    EXPECT_GT(spec.drafted, 0);
    EXPECT_GT(spec.accepted, 0);
    EXPECT_LE(spec.accepted, spec.drafted);
    EXPECT_EQ(spec.passes + spec.accepted, plain.passes);
  }
}

TEST(Speculative, DraftModelsGiveThePlainTextWhetherTheyAgreeOrNot) {
  auto target = load(test::shared_model("stories260K.gguf"));
  auto same = load(test::shared_model("stories260K.gguf"));  // a draft that is the target itself
  auto other = load(random_draft());                          // a draft that mostly disagrees
  ASSERT_TRUE(target && same && other);
  backend::CpuDevice cpu(1, uint64_t{1} << 32, 10.0);
  for (const sample::SamplerParams& s : {greedy(), seeded()}) {
    const Outcome plain = generate(*target, kPrompt, s, {}, nullptr);
    auto agree = exec::DraftModel::create(*same, *target, cpu, 1, kCtx);
    ASSERT_TRUE(agree.ok()) << agree.error().to_string();
    (*agree)->set_min_probability(0.0f);
    const Outcome a = generate(*target, kPrompt, s, {DraftMode::Model, 6, false}, agree->get());
    EXPECT_EQ(a.tokens, plain.tokens) << "temperature " << s.temperature;
    EXPECT_EQ(a.passes + a.accepted, plain.passes);
    if (s.temperature <= 0) {
      // The target as its own greedy draft: every guess is the target's own choice.
      EXPECT_EQ(a.accepted, a.drafted);
      EXPECT_LT(a.passes * 4, plain.passes);
    }
    auto disagree = exec::DraftModel::create(*other, *target, cpu, 1, kCtx);
    ASSERT_TRUE(disagree.ok()) << disagree.error().to_string();
    (*disagree)->set_min_probability(0.0f);
    const Outcome d = generate(*target, kPrompt, s, {DraftMode::Model, 4, false}, disagree->get());
    EXPECT_EQ(d.tokens, plain.tokens) << "temperature " << s.temperature;
    EXPECT_GT(d.drafted, 0);
    EXPECT_LT(d.accepted, d.drafted);  // rejections happened, and the text did not change
    EXPECT_EQ(d.passes + d.accepted, plain.passes);
  }
}

TEST(Speculative, ADraftOfAnotherVocabularyIsRefused) {
  auto target = load(test::shared_model("stories260K.gguf"));
  auto foreign = load(test::shared_model("llama-2-tiny-random.gguf"));  // 32000 tokens against 512
  ASSERT_TRUE(target && foreign);
  backend::CpuDevice cpu(1, uint64_t{1} << 32, 10.0);
  auto d = exec::DraftModel::create(*foreign, *target, cpu, 1, kCtx);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, Code::InvalidArgument);
  EXPECT_NE(d.error().message.find("32000"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("vocabulary"), std::string::npos) << d.error().message;
  exec::SpeculativeParams bad{DraftMode::Lookup, 0};
  EXPECT_FALSE(exec::validate(bad).ok());
  EXPECT_FALSE(exec::parse_draft_mode("medusa").ok());
  EXPECT_EQ(*exec::parse_draft_mode("lookup"), DraftMode::Lookup);
}

// A pass of more rows than the placement's batch is cut into micro-batches, each returning its rows'
// logits: with batches of 3 tokens, 8 guesses a step still give the plain text.
TEST(Speculative, GuessesAcrossSeveralMicroBatchesGiveThePlainText) {
  auto m = load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  const Outcome plain = generate(*m, kPrompt, greedy(), {}, nullptr, 80, 3);
  const Outcome spec = generate(*m, kPrompt, greedy(), {DraftMode::Lookup, 8, false}, nullptr, 80, 3);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.accepted, 0);
  EXPECT_EQ(spec.passes + spec.accepted, plain.passes);
}

TEST(Speculative, MaxTokensCutsASpeculativeStepExactly) {
  auto m = load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  for (int64_t n : {1, 2, 5, 17}) {
    const Outcome plain = generate(*m, kPrompt, greedy(), {}, nullptr, n);
    const Outcome spec = generate(*m, kPrompt, greedy(), {DraftMode::Lookup, 8, false}, nullptr, n);
    EXPECT_EQ(spec.tokens, plain.tokens) << n;
    EXPECT_EQ(static_cast<int64_t>(spec.tokens.size()), n);
  }
}

// The Scheduler: four requests at once over one pipeline (two speculating by lookup, one with the
// draft model, one plain), each giving generate()'s plain text.
TEST(Speculative, SchedulerRequestsGiveThePlainTextAndCountTheirGuesses) {
  auto m = load(test::shared_model("stories260K.gguf"));
  auto same = load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m && same);
  backend::CpuDevice cpu(2, uint64_t{1} << 32, 10.0);
  auto pipeline = exec::Pipeline::create(*m, {&cpu}, exec::single_device_placement(m->config(), "cpu", kCtx, 4, 64));
  ASSERT_TRUE(pipeline.ok());
  backend::CpuDevice draft_cpu(1, uint64_t{1} << 32, 10.0);
  auto draft = exec::DraftModel::create(*same, *m, draft_cpu, 4, kCtx);
  ASSERT_TRUE(draft.ok());
  (*draft)->set_min_probability(0.0f);
  const std::vector<std::string> prompts = {kPrompt, "Tom had a red car. Tom liked his red car.", kPrompt,
                                            "The sun was shining and the birds were singing."};
  const std::vector<sample::SamplerParams> sampling = {greedy(), greedy(), seeded(), greedy()};
  const std::vector<exec::SpeculativeParams> spec = {
      {DraftMode::Lookup, 8, false}, {DraftMode::Model, 5, false}, {DraftMode::Lookup, 3, false}, {DraftMode::Off, 8}};
  std::vector<Outcome> want;
  for (size_t i = 0; i < prompts.size(); ++i) want.push_back(generate(*m, prompts[i], sampling[i], {}, nullptr, 60));
  {
    exec::SchedulerOptions so;
    so.draft = draft->get();
    exec::Scheduler sched(**pipeline, so);
    exec::GenerationRequest refused;
    refused.prompt = encode(*m, "x");
    refused.speculative = {DraftMode::Lookup, 33};
    EXPECT_FALSE(sched.submit(std::move(refused)).ok());
    std::vector<std::promise<exec::GenerationResult>> done(prompts.size());
    std::vector<std::vector<int32_t>> got(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      exec::GenerationRequest r;
      r.prompt = encode(*m, prompts[i]);
      r.sampling = sampling[i];
      r.max_tokens = 60;
      r.speculative = spec[i];
      r.on_token = [&got, i](const exec::TokenInfo& t) { got[i].push_back(t.token); };
      r.on_done = [&done, i](const exec::GenerationResult& res) { done[i].set_value(res); };
      ASSERT_TRUE(sched.submit(std::move(r)).ok());
    }
    int64_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const exec::GenerationResult res = done[i].get_future().get();
      ASSERT_TRUE(res.status.ok()) << res.status.error().to_string();
      EXPECT_EQ(got[i], want[i].tokens) << "request " << i;
      EXPECT_LE(res.n_draft_accepted, res.n_drafted);
      if (spec[i].mode == DraftMode::Off) EXPECT_EQ(res.n_drafted, 0);
      else EXPECT_GT(res.n_drafted, 0) << "request " << i;
      drafted += res.n_drafted;
      accepted += res.n_draft_accepted;
    }
    EXPECT_GT(accepted, 0);
    const exec::SchedulerStats st = sched.stats();
    EXPECT_EQ(st.draft_tokens, static_cast<uint64_t>(drafted));
    EXPECT_EQ(st.draft_accepted, static_cast<uint64_t>(accepted));
  }
  // Without a draft model a request for one is refused.
  exec::Scheduler plain(**pipeline, {});
  exec::GenerationRequest r;
  r.prompt = encode(*m, kPrompt);
  r.speculative = {DraftMode::Model, 4, false};
  auto refused = plain.submit(std::move(r));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::InvalidArgument);
}

}  // namespace
}  // namespace strata
