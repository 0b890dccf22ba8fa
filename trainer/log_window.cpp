#include "trainer/log_window.h"

#include "common/malloc_info.h"

#include <utility>

#include <fmt/core.h>

namespace dialtree::trainer {

using nlohmann::json;

void LogWindow::add(const StepEvent& e) {
  const StepLosses& l = e.stats->losses;
  loss += l.total, sup += l.sup, self += l.self, mlm_l += l.mlm_l, mlm_u += l.mlm_u;
  grad_norm += e.grad_norm, steps += 1, examples += e.examples, seconds += e.seconds;
  tokens += e.stats->tokens, real_tokens += e.stats->real_tokens;
  generator_mlm += l.generator_mlm, replaced_token += l.replaced_token;
  encoder_mlm += l.encoder_mlm;
  token_contrastive += l.token_contrastive;
}

json LogWindow::to_json() const {
  return {{"health", health},
          {"rank_compute", rank_compute},
          {"rank_collective", rank_collective},
          {"rank_wait", rank_wait},
          {"loss", loss},
          {"sup", sup},
          {"self", self},
          {"mlm_l", mlm_l},
          {"mlm_u", mlm_u},
          {"generator_mlm", generator_mlm},
          {"replaced_token", replaced_token},
          {"encoder_mlm", encoder_mlm},
          {"token_contrastive", token_contrastive},
          {"grad_norm", grad_norm},
          {"steps", steps},
          {"examples", examples},
          {"seconds", seconds},
          {"tokens", tokens},
          {"real_tokens", real_tokens}};
}

LogWindow LogWindow::from_json(const json& j) {
  LogWindow w;
  w.loss = j.at("loss"), w.sup = j.at("sup"), w.self = j.at("self");
  w.mlm_l = j.at("mlm_l"), w.mlm_u = j.at("mlm_u"), w.grad_norm = j.at("grad_norm");
  w.steps = j.at("steps"), w.examples = j.at("examples"), w.seconds = j.at("seconds");
  // Absent in checkpoints written before the padding count existed.
  w.tokens = j.value("tokens", 0.0), w.real_tokens = j.value("real_tokens", 0.0);
  // Absent in checkpoints written before replaced-token detection existed.
  w.generator_mlm = j.value("generator_mlm", 0.0);
  w.replaced_token = j.value("replaced_token", 0.0);
  w.encoder_mlm = j.value("encoder_mlm", 0.0);  // absent before loss.encoder_mlm_weight existed
  // Absent before loss.token_contrastive_weight existed.
  w.token_contrastive = j.value("token_contrastive", 0.0);
  // Absent in checkpoints written before the health checks existed.
  w.rank_compute = j.value("rank_compute", std::vector<double>{});
  w.rank_collective = j.value("rank_collective", std::vector<double>{});
  w.rank_wait = j.value("rank_wait", std::vector<double>{});
  w.health = j.value("health", 0.0);
  return w;
}

MetricsLog::MetricsLog(LogWindow& window, std::ostream* metrics, LogSink say,
                       MetricsLogOptions options, WindowReporter* reporter)
    : window_(window),
      metrics_(metrics),
      say_(std::move(say)),
      options_(options),
      reporter_(reporter) {}

void MetricsLog::after_step(const StepEvent& e) {
  window_.add(e);
  if (e.step % options_.logging_steps != 0 && e.step != e.total) return;
  write(e);
  window_ = LogWindow{};
}

void MetricsLog::write(const StepEvent& e) {
  const LogWindow& w = window_;
  const double nsteps = static_cast<double>(w.steps);
  json rec = {
      {"step", e.step},
      {"epoch", static_cast<double>(e.step) / static_cast<double>(options_.steps_per_epoch)},
      {"loss", w.loss / nsteps},
      {"contrastive", w.sup / nsteps},
      {"self_supervised", w.self / nsteps},
      {"mlm_labelled", w.mlm_l / nsteps},
      {"mlm_unlabelled", w.mlm_u / nsteps},
      {"learning_rate", e.learning_rate},
      {"grad_norm", w.grad_norm / nsteps},
      {"examples_per_second", static_cast<double>(w.examples) / w.seconds},
      {"padded_token_fraction", w.tokens > 0 ? 1.0 - w.real_tokens / w.tokens : 0.0},
      {"train_seconds", e.train_seconds}};
  const std::int64_t resident = resident_set_bytes();
  if (resident >= 0) rec["resident_set_mb"] = static_cast<double>(resident) / (1 << 20);
  if (options_.rtd) {
    rec["generator_mlm"] = w.generator_mlm / nsteps;
    rec["replaced_token"] = w.replaced_token / nsteps;
    if (options_.encoder_mlm) rec["encoder_mlm"] = w.encoder_mlm / nsteps;
  }
  if (options_.token_contrastive) rec["token_contrastive"] = w.token_contrastive / nsteps;
  const std::string ranks_text = reporter_ != nullptr ? reporter_->report(w, rec) : "";
  if (metrics_ != nullptr) *metrics_ << rec.dump() << "\n" << std::flush;
  if (!say_) return;
  const double step_secs =
      seconds_elapsed(start_) / static_cast<double>(e.step - options_.first_step);
  const std::string rtd_text =
      options_.rtd ? fmt::format("  generator mlm {:.3f}, replaced-token BCE {:.4f}{}",
                                 w.generator_mlm / nsteps, w.replaced_token / nsteps,
                                 options_.encoder_mlm
                                     ? fmt::format(", encoder mlm {:.3f}", w.encoder_mlm / nsteps)
                                     : std::string())
                   : std::string();
  const std::string token_text = options_.token_contrastive
                                     ? fmt::format("  token {:.4f}", w.token_contrastive / nsteps)
                                     : std::string();
  say_(fmt::format(
      "step {}/{}  loss {:.4f} (contrastive {:.4f}, self {:.4f}, mlm {:.3f}/{:.3f})"
      "{}  lr {:.2e}  |g| {:.2f}  {:.1f} ex/s  padding {:.0f}%{}  ETA {}{}",
      e.step, e.total, w.loss / nsteps, w.sup / nsteps, w.self / nsteps, w.mlm_l / nsteps,
      w.mlm_u / nsteps, rtd_text + token_text, e.learning_rate, w.grad_norm / nsteps,
      static_cast<double>(w.examples) / w.seconds,
      w.tokens > 0 ? 100.0 * (1.0 - w.real_tokens / w.tokens) : 0.0, ranks_text,
      duration_text(step_secs * static_cast<double>(e.total - e.step)),
      resident >= 0 ? fmt::format("  RSS {:.2f} GB", static_cast<double>(resident) / (1 << 30))
                    : std::string()));
}

std::string duration_text(double s) {
  const auto t = static_cast<long>(s);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60)
                   : fmt::format("{}m{:02}s", t / 60, t % 60);
}

}  // namespace dialtree::trainer
