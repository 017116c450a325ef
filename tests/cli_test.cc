// The trainwatch binary, run as a user would: exit codes, messages, output formats.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "support/test_env.h"

namespace tw {
namespace {

using testing::ShellQuote;

using testing::CorpusDir;
using testing::RunCommand;
using testing::TempDir;

std::string Cli() { return TW_CLI_BINARY; }
// Quotes for the shell.
TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"ingest", "query", "runs", "diagnose", "findings", "roles", "rules"}) {
    std::string out;
    EXPECT_EQ(RunCommand(Cli() + " " + cmd + " --help", &out), 0) << cmd;
    EXPECT_NE(out.find(std::string("usage: trainwatch ") + cmd), std::string::npos) << out;
  }
  std::string out;
  EXPECT_EQ(RunCommand(Cli() + " --help", &out), 0);
  EXPECT_NE(out.find("commands:"), std::string::npos);
}

TEST(Cli, UsageErrorsExitTwoAndSayWhat) {
  std::string out;
  EXPECT_EQ(RunCommand(Cli() + " frobnicate", &out), 2);
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Cli() + " ingest /tmp", &out), 2);
  EXPECT_NE(out.find("--db"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Cli() + " ingest --db x.db --bacth 5 /tmp", &out), 2);
  EXPECT_NE(out.find("unknown option --bacth"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Cli() + " query --db x.db --format xml 'SELECT 1'", &out), 2);
  EXPECT_NE(out.find("unknown --format 'xml'"), std::string::npos) << out;
}

TEST(Cli, MissingPathIsNamedAndNothingReadExitsOne) {
  TempDir dir;
  std::string out;
  EXPECT_EQ(RunCommand(Cli() + " ingest --db " + ShellQuote(dir / "t.db") + " " + ShellQuote(dir / "nope"), &out), 1);
  EXPECT_NE(out.find(dir / "nope"), std::string::npos) << out;
  EXPECT_NE(out.find("no such file or directory"), std::string::npos) << out;
}

TEST(Cli, ADirectoryOfOnlyLfsPointersExitsOneWithTheReason) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  TempDir dir;
  std::string out;
  EXPECT_EQ(RunCommand(Cli() + " ingest --db " + ShellQuote(dir / "t.db") + " " +
                           ShellQuote(corpus + "/edge-git-lfs-pointer"),
                       &out),
            1);
  EXPECT_NE(out.find("Git LFS pointer"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing could be read"), std::string::npos) << out;
}

TEST(Cli, DatabaseThatIsNotOursIsRefused) {
  TempDir dir;
  testing::WriteFile(dir / "notes.txt", "just some text, long enough to not be a database......");
  std::string out;
  EXPECT_EQ(RunCommand(Cli() + " query --db " + ShellQuote(dir / "notes.txt") + " 'SELECT 1'", &out), 1);
  EXPECT_NE(out.find("not a trainwatch database"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Cli() + " runs --db " + ShellQuote(dir / "absent.db"), &out), 1);
  EXPECT_NE(out.find("absent.db"), std::string::npos) << out;
}

class CliOnCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    corpus_ = CorpusDir();
    if (corpus_.empty()) GTEST_SKIP() << "../shared/corpus not found";
    db_ = dir_ / "t.db";
    std::string out;
    ASSERT_EQ(RunCommand(Cli() + " ingest --db " + ShellQuote(db_) + " " + ShellQuote(corpus_ + "/torch-summarywriter"),
                         &out),
              0)
        << out;
    ingest_output_ = out;
  }
  TempDir dir_;
  std::string corpus_, db_, ingest_output_;
};

TEST_F(CliOnCorpus, IngestPrintsASummary) {
  EXPECT_NE(ingest_output_.find("ingested 10 runs, 11 files"), std::string::npos) << ingest_output_;
  EXPECT_NE(ingest_output_.find("errors: 0"), std::string::npos) << ingest_output_;
  // Not a TTY here: no progress bar escape sequences.
  EXPECT_EQ(ingest_output_.find('\r'), std::string::npos);
}

TEST_F(CliOnCorpus, QueryFormats) {
  const std::string sql =
      ShellQuote("SELECT run, step, value FROM scalar_points WHERE tag = 'Train/Loss' AND "
        "run = 'ZeroToMax-ZYZ__study_tensorboard/runs/experiment_lr_0.1' ORDER BY step LIMIT 3");
  std::string out;
  ASSERT_EQ(RunCommand(Cli() + " query --db " + ShellQuote(db_) + " --format csv " + sql, &out), 0) << out;
  EXPECT_TRUE(out.starts_with("run,step,value\nZeroToMax-ZYZ__study_tensorboard/runs/experiment_lr_0.1,0,")) << out;
  ASSERT_EQ(RunCommand(Cli() + " query --db " + ShellQuote(db_) + " --format json " + sql, &out), 0) << out;
  EXPECT_TRUE(out.starts_with("{\"run\":\"ZeroToMax-ZYZ__study_tensorboard/runs/experiment_lr_0.1\",\"step\":0,\"value\":")) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
  ASSERT_EQ(RunCommand(Cli() + " query --db " + ShellQuote(db_) + " " + sql, &out), 0) << out;
  EXPECT_NE(out.find("(3 rows)"), std::string::npos) << out;
}

TEST_F(CliOnCorpus, BadSqlIsReportedNotCrashed) {
  std::string out;
  EXPECT_EQ(RunCommand(Cli() + " query --db " + ShellQuote(db_) + " 'SELEC nonsense'", &out), 1);
  EXPECT_NE(out.find("syntax error"), std::string::npos) << out;
  // Read-only: a write through query is refused.
  EXPECT_EQ(RunCommand(Cli() + " query --db " + ShellQuote(db_) + " 'DELETE FROM runs'", &out), 1);
  EXPECT_NE(out.find("readonly"), std::string::npos) << out;
}

TEST_F(CliOnCorpus, RunsListsTagsPointsAndLastStep) {
  std::string out;
  ASSERT_EQ(RunCommand(Cli() + " runs --db " + ShellQuote(db_) + " --format csv", &out), 0) << out;
  EXPECT_NE(out.find("runs/my_first_experiment,tensorboard,Metrics/Accuracy Metrics/Loss,200,99,"),
            std::string::npos)
      << out;
}

TEST_F(CliOnCorpus, RunsShowsAWandbRunsFormatExitCodeAndCountsItsSystemMetrics) {
  TempDir dir;
  const std::string db = dir / "w.db";
  std::string out;
  ASSERT_EQ(RunCommand(Cli() + " ingest --db " + ShellQuote(db) + " " +
                           ShellQuote(corpus_ + "/wandb-core-0.21/0Chris5R__StanfordCS336-Own-Transformer/wandb/"
                                       "run-20260119_214939-8atu6kfy"),
                       &out),
            0)
      << out;
  ASSERT_EQ(RunCommand(Cli() + " runs --db " + ShellQuote(db) + " --format csv", &out), 0) << out;
  // The run is the directory ".", its system metrics summed up, exit code 0 last.
  EXPECT_NE(out.find(".,wandb,grad_norm lr train/loss val/loss val/perplexity weight_norm (+32 system/*),"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(",19990,"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.rfind(',') + 1, 1), "0") << out;
}

TEST_F(CliOnCorpus, SecondIngestReadsNothingNewAndSucceeds) {
  std::string out;
  ASSERT_EQ(RunCommand(Cli() + " ingest --db " + ShellQuote(db_) + " " + ShellQuote(corpus_ + "/torch-summarywriter"),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("new points: 0 scalars"), std::string::npos) << out;
}

// The diagnosis commands on the bundled example logdir (one run diverges into NaN, one
// overfits): what a user runs first.
// diagnose --explain: a run without an accuracy, a loss scale or a step time is told which checks
// cannot run on it and which role (with example tags) each lacks; what it has is listed.
TEST(Cli, DiagnoseExplainNamesTheChecksARunCannotFeed) {
  TempDir dir;
  const std::string db = dir / "tw.db";
  ASSERT_EQ(RunCommand(Cli() + " ingest --quiet --db " + ShellQuote(db) + " " + ShellQuote(TW_CPU_RUNS_DIR)), 0);
  std::string out;
  ASSERT_EQ(RunCommand(Cli() + " diagnose --db " + ShellQuote(db) + " --explain 'healthy_dropout_hf' 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("run healthy_dropout_hf: "), std::string::npos) << out;
  EXPECT_NE(out.find("    val_loss: eval/loss\n"), std::string::npos) << out;
  EXPECT_NE(out.find("loss_scale_collapse: needs loss_scale (tags such as loss_scale: 'loss_scale'"), std::string::npos)
      << out;
  EXPECT_NE(out.find("step_time_creep: needs step_time or steps_per_sec"), std::string::npos) << out;
  EXPECT_NE(out.find("gpu_util_low: needs gpu_util"), std::string::npos) << out;
  // Roles only inference names (activation statistics, the QAT pair) come with examples too.
  EXPECT_NE(out.find("dead_relu: needs dead_units or act_zero_frac (tags such as dead_units: 'act/relu_dead_frac/layer2'"),
            std::string::npos) << out;
  EXPECT_NE(out.find("qat_gap_widening: needs qat_loss and fp_loss (tags such as qat_loss: 'qat/loss'"), std::string::npos)
      << out;
  // It logs eval/accuracy, so the loss-accuracy check can run; nothing is diagnosed.
  EXPECT_EQ(out.find("loss_acc_disagree:"), std::string::npos) << out;
  EXPECT_EQ(out.find("[warning"), std::string::npos) << out;
  // A check that needs a fact of the hyperparameters, not a tag: K for ln K. This run names
  // none; one that logs num_classes can be judged.
  EXPECT_NE(out.find("initial_loss_high: needs a class count or vocabulary size in its hyperparameters"),
            std::string::npos) << out;
  ASSERT_EQ(RunCommand(Cli() + " diagnose --db " + ShellQuote(db) + " --explain 'healthy_init_mlp_k10' 2>&1", &out), 0);
  EXPECT_EQ(out.find("initial_loss_high:"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(Cli() + " diagnose --db " + ShellQuote(db) + " --explain 'no_such_run*'", &out), 0);
  EXPECT_NE(out.find("no run matches"), std::string::npos) << out;
}

TEST(Cli, DiagnoseFindingsRolesAndRules) {
  TempDir dir;
  const std::string db = dir / "tw.db", logdir = dir / "logdir";
  ASSERT_EQ(RunCommand(std::string(TW_EXAMPLE_BINARY) + " " + ShellQuote(logdir)), 0);
  ASSERT_EQ(RunCommand(Cli() + " ingest --quiet --db " + ShellQuote(db) + " " + ShellQuote(logdir)), 0);

  std::string out;
  ASSERT_EQ(RunCommand(Cli() + " diagnose --db " + ShellQuote(db) + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("== bert-finetune-diverged: kill"), std::string::npos) << out;
  EXPECT_NE(out.find("[critical non_finite_loss on train/loss]"), std::string::npos) << out;
  EXPECT_NE(out.find("cause: "), std::string::npos) << out;
  EXPECT_NE(out.find("^ step 1500"), std::string::npos) << "the onset is marked under the sparkline\n" << out;
  // The W&B run: its GPU memory (a system metric of the .wandb log) leaks; nothing else is wrong.
  const size_t wandb_run = out.find("== wandb/run-20231118_093000-t5leak01: watch\n");
  ASSERT_NE(wandb_run, std::string::npos) << out;
  const std::string wandb_report = out.substr(wandb_run, out.find("\n== ", wandb_run + 1) - wandb_run);
  EXPECT_NE(wandb_report.find("[warning memory_growth on system/gpu.0.memoryAllocated]"), std::string::npos)
      << wandb_report;
  size_t findings = 0;
  for (size_t at = wandb_report.find("\n  ["); at != std::string::npos; at = wandb_report.find("\n  [", at + 1))
    ++findings;
  EXPECT_EQ(findings, 1u) << "only the leak is wrong with it\n" << wandb_report;
  // The Keras pair: both runs log epoch_loss; the message names the validation one with its run.
  EXPECT_NE(out.find("validation/epoch_loss has risen from its best"), std::string::npos) << out;

  ASSERT_EQ(RunCommand(Cli() + " diagnose --format json --run 'bert*' --db " + ShellQuote(db), &out), 0);
  EXPECT_EQ(out.front(), '[') << out;
  EXPECT_NE(out.find("\"rule\":\"non_finite_loss\""), std::string::npos) << out;
  EXPECT_EQ(out.find("vit-small"), std::string::npos) << "--run filters runs: " << out;

  // A typo in a threshold is an error that names it; a bad --set is a usage error.
  EXPECT_EQ(RunCommand(Cli() + " diagnose --set loss_spikes.zz=3 --db " + ShellQuote(db) + " 2>&1", &out), 1);
  EXPECT_NE(out.find("rule loss_spikes has no parameter 'zz'"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Cli() + " diagnose --set nodot=3 --db " + ShellQuote(db) + " 2>&1", &out), 2);
  EXPECT_NE(out.find("--set wants ID.PARAM=VALUE"), std::string::npos) << out;

  // The daemon has not run on this store: nothing stored.
  ASSERT_EQ(RunCommand(Cli() + " findings --db " + ShellQuote(db), &out), 0);
  EXPECT_NE(out.find("no findings"), std::string::npos) << out;

  ASSERT_EQ(RunCommand(Cli() + " roles --format csv --run 'vit*' --db " + ShellQuote(db), &out), 0);
  EXPECT_NE(out.find("vit-small-tf2/train,val_loss,epoch_loss,vit-small-tf2/validation"), std::string::npos)
      << "Keras validation runs pair with their train run\n" << out;

  ASSERT_EQ(RunCommand(Cli() + " rules", &out), 0);
  for (const char* id : {"non_finite_loss", "loss_divergence", "overfitting", "stale_run", "grokking", "run_verdict"})
    EXPECT_NE(out.find(std::string(id) + "  ["), std::string::npos) << id;
  EXPECT_NE(out.find("z = 7: modified z"), std::string::npos) << out;

  // The diagnosis functions work in ad hoc queries.
  ASSERT_EQ(RunCommand(Cli() + " query --format csv --db " + ShellQuote(db) +
                           " \"SELECT json_extract(tw_trend(step, value), '$.n') > 0 FROM scalar_points\"", &out), 0)
      << out;
  EXPECT_NE(out.find("\n1"), std::string::npos) << out;

  // --roles maps the tags first, so a rule's own query runs ad hoc; without it there is no
  // role_points.
  const std::string roles_sql =
      " \"SELECT r.name, p.tag FROM role_points p JOIN runs r USING (run_id) "
      "WHERE p.role = 'train_loss' AND r.name LIKE 'bert%' GROUP BY r.name\"";
  ASSERT_EQ(RunCommand(Cli() + " query --roles --format csv --db " + ShellQuote(db) + roles_sql, &out), 0) << out;
  EXPECT_NE(out.find("bert-finetune-diverged,train/loss"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Cli() + " query --format csv --db " + ShellQuote(db) + roles_sql + " 2>&1", &out), 1);
  EXPECT_NE(out.find("no such table: role_points"), std::string::npos) << out;
}

}  // namespace
}  // namespace tw
