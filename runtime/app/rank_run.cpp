#include "app/rank_run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>

#include "app/banner.hpp"
#include "app/tile_loop.hpp"
#include "distributed/communicator.hpp"
#include "distributed/lease_book.hpp"
#include "distributed/run_outcome.hpp"
#include "mgpr/error.hpp"
#include "mgpr/input_list.hpp"
#include "model/cuda_backend.hpp"
#include "pipeline/memory_budget.hpp"
#include "pipeline/progress_printer.hpp"
#include "pipeline/rank_summary.hpp"
#include "resume/journal_notes.hpp"
#include "resume/run_journal.hpp"
#include "resume/stop_request.hpp"
#include "stream/handed_tiles.hpp"
#include "stream/output_stream.hpp"
#include "stream/writer_layout.hpp"
#include "tasks/task_output.hpp"
#include "writers/partial_names.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// What the prepare phase settles, before any rank waits on another.
struct Prepared {
  BackendInfo backend;
  std::unique_ptr<TileSource> source;
  std::unique_ptr<TileModel> model;
  std::unique_ptr<TaskOutput> output;
};

// Inputs and model are checked before rendezvous: a bad input fails every rank at
// once with the same message, instead of leaving peers waiting.
Prepared prepare(const RunPlan& plan, const RankEnvironment& ranks) {
  Prepared run;
  run.backend = configure_backend(plan.threads);
  run.source = make_tile_source(plan.source);
  check_run_fits(plan, *run.source);
  run.model = std::make_unique<TileModel>(plan.model, plan.device, run.source->channels(), plan.execution);
  auto crop_classifier = plan.crop_classifier
                             ? make_crop_classifier(*plan.crop_classifier, plan.device, plan.execution, *run.source)
                             : nullptr;
  // The detector's own cap, where it keeps one, over its card's (run_plan.cpp).
  auto output_options = plan.output;
  if (const auto cap = run.model->detection_limits().detections_per_img) output_options.box_cap = *cap;
  run.output = make_task_output(plan_outputs(output_options, *run.source), std::move(crop_classifier));
  run.output->check_output(run.model->dummy_output(), 1, plan.source.tile_size);
  check_class_names(plan.output.task, run.model->dummy_output(), plan.output.class_names, plan.class_names_origin);
  // After the checks, which read the dummy tile's output whole.
  run.model->set_output_reduction(run.output->device_reduction());
  print_banner(ranks, plan, {run.backend, *run.source, *run.model});
  return run;
}

// What earlier runs finished, read before the rendezvous; rank 0 says what it drops.
TileResults read_done_tiles(const RunJournal& journal, const RunPlan& plan, const TileSource& source, int rank) {
  auto done = journal.done_tiles(source.tiles());
  if (rank == 0) print_dropped_results(done, plan.source.rasters, journal.folder());
  return std::move(done.results);
}

// One rank's run once prepared; the members are what its phases share.
class RankRun {
 public:
  RankRun(const RunPlan& plan, const RankEnvironment& ranks, Prepared run)
      : plan_(plan),
        ranks_(ranks),
        journal_(plan.journal_folder, plan.source.rasters, plan.resume,
                 {record_text(plan.journal_settings, plan.source.rasters), plan.legacy_journal_folder}),
        run_(std::move(run)),
        done_(read_done_tiles(journal_, plan, *run_.source, ranks.rank)),
        done_counts_(done_per_image(done_, run_.source->tiles())),
        done_total_(static_cast<std::int64_t>(done_.size())),
        summary_(base_summary(ranks, plan.device)) {
    describe_model(summary_, plan.output.class_names, plan.model_card);
    summary_.warnings = run_.model->warnings();
  }

  // Joins the other ranks (which also tells the plugin's watchdog this rank arrived).
  // Every rank read the journals before this and none appends before the barrier at its
  // end, so all ranks agree on the tiles left to do.
  void join(const std::shared_ptr<EarlyStore>& early_store, std::size_t tiles_left) {
    communicator_ = join_run(ranks_, plan_.rendezvous, early_store);
    if (ranks_.rank == 0) {
      journal_.begin();
      if (!done_.empty()) {
        fmt::print("# resuming: {} of {} tiles were finished by an earlier run ({}); {} left\n", done_.size(),
                   run_.source->tiles().size(), journal_.folder().string(), tiles_left);
      }
      for (const auto& note : journal_.notes()) fmt::print("# {}\n", note);
      std::fflush(stdout);
    }
    communicator_->barrier();
  }

  // The tile loop over this rank's share of `todo`, each batch's results going to rank 0,
  // which writes every raster's outputs as soon as it is final; then every rank learns
  // how many tiles every rank finished and every raster that failed, so all agree how
  // the run ended, and rank 0 writes what is left and the run's files when every tile is
  // done but those of failed rasters.
  Outcome process(const std::vector<Tile>& todo) {
    auto tile_journal = journal_.for_rank(ranks_.rank);
    run_.output->set_journal(&tile_journal);
    std::unique_ptr<OutputStream> stream;
    // on_rank_loss=continue: a lost rank's tiles, done again by the live ones.
    auto returned = survive_rank_loss() ? std::make_unique<ReturnedTiles>() : nullptr;
    std::unique_ptr<LeaseBook> book;
    std::unique_ptr<ResultMail> mail;
    std::unique_ptr<HandedTiles> handed;
    constexpr int writer = 0;  // the run's one writer (stream/writer_layout.hpp)
    if (ranks_.rank == kRunWriters.rank_of_writer(writer)) {
      // What a killed run of this host left half-written, before this run writes beside it.
      if (const auto stale = output::remove_stale_partials(plan_.output.output_dir); !stale.empty()) {
        fmt::print(stderr, "mgpr: removed {} temporary file(s) that a killed run left in {} (e.g. {})\n", stale.size(),
                   plan_.output.output_dir.string(), stale.front().filename().string());
      }
      stream = std::make_unique<OutputStream>(*run_.output, std::move(done_), *communicator_, writer,
                                              WriterRecord{&summary_.writer_held_peak_tiles, &summary_.warnings,
                                                           &summary_.lost_ranks, todo, returned.get()});
      run_.output->set_sink(stream.get());
    } else {
      // Its leases on the store, for rank 0 to name what it held should it be lost.
      if (plan_.sharding == Sharding::kDynamic) book = std::make_unique<LeaseBook>(todo, *communicator_);
      mail = std::make_unique<ResultMail>(*communicator_, writer, book.get());
      run_.output->set_sink(mail.get());
      if (returned) {
        handed = std::make_unique<HandedTiles>(HandedTiles::Parts{*returned, *communicator_, book.get(), *mail, todo,
                                                                  std::ssize(run_.source->tiles()), writer});
      }
    }
    done_ = {};  // the earlier runs' results are rank 0's writer's now
    const auto run_tiles = static_cast<std::int64_t>(todo.size());
    printer_ = std::make_unique<ProgressPrinter>(ranks_.rank, run_tiles / ranks_.world_size, run_tiles,
                                                 plan_.log_interval, ::isatty(STDERR_FILENO) != 0);
    const auto own_failures = run_tile_loop(
        plan_, ranks_,
        {*run_.source, *run_.model, *run_.output, *communicator_, book.get(), returned.get(), handed.get()}, todo,
        *printer_, summary_);
    // Every rank's last results are on the store before rank 0's writer takes the rest.
    run_.output->flush_sink();
    communicator_->barrier();
    run_.output->set_sink(nullptr);
    std::exception_ptr write_failure;
    if (stream) {
      try {
        stream->drain();
      } catch (const std::exception&) {
        write_failure = std::current_exception();  // after the agreement, which every rank waits for
      }
    }
    const auto done_before = done_total_;
    // Under on_rank_loss=continue the writer's count is the run's: a lost rank's left with it.
    auto tiles_done = run_.output->tiles_done();
    if (survive_rank_loss()) tiles_done = stream ? stream->tiles_received(done_counts_) : std::map<int, std::int64_t>{};
    if (stream) skipped_ = stream->skipped_tiles();
    const auto outcome = agree_on_outcome(*communicator_, {tiles_done, own_failures, std::ssize(skipped_)},
                                          run_.source->tiles(), done_counts_, failed_, done_total_);
    printer_->run_finished(done_total_ - done_before);
    if (ranks_.rank != 0) return outcome;
    if (write_failure) {
      say_stop_or_rethrow(write_failure);
      return Outcome::kStopped;
    }
    if (outcome == Outcome::kStopped) return outcome;
    return write_outputs(outcome, *stream);
  }

  // Whatever was measured is kept: the summary says which rank failed and why.
  void record_failure(const std::exception& failure, Clock::time_point started) {
    note_counts();
    summary_.status = RankStatus::kFailed;
    summary_.error = failure.what();
    summary_.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    mark_end_of_timeline(summary_);
    write_rank_summary(summary_);
  }

  // What the task and the store counted, into the summary.
  void note_counts() {
    add_task_notes(summary_, *run_.output);
    if (communicator_) summary_.store_requests = communicator_->store_requests();
  }

  // The rank's summary file; then rank 0 prints every rank's summary as one table, and
  // all ranks wait for it.
  void report(Outcome outcome, Clock::time_point started) {
    if (outcome == Outcome::kStopped) {
      summary_.status = RankStatus::kInterrupted;
      summary_.error = fmt::format("stopped by signal {} ({}) with {} of {} tiles finished", stop_signal(),
                                   strsignal(stop_signal()), done_total_, run_.source->tiles().size());
    }
    note_counts();
    write_rank_summary(summary_);
    const auto gathered = communicator_->all_gather(to_json_text(summary_));
    if (ranks_.rank == 0) {
      std::vector<RankSummary> all;
      for (std::size_t i = 0; i < gathered.size(); ++i) {
        all.push_back(gathered[i].empty() ? lost_rank_summary(static_cast<int>(i), ranks_.world_size)
                                          : rank_summary_from_json(gathered[i], fmt::format("rank {}", i)));
      }
      fmt::print("{}", usage_summary(all, std::chrono::duration<double>(Clock::now() - started).count()));
      RunEnd end{
          {}, run_.source->rasters().size(), done_total_, run_.source->tiles().size(), outcome == Outcome::kStopped,
          {}};
      for (const auto& [image, reason] : failed_)
        end.failed.emplace_back(run_.source->rasters().at(static_cast<std::size_t>(image)).path, reason);
      for (const auto& tile : skipped_) end.skipped.push_back(tile_name(run_.output->plan(), tile));
      print_run_end(end, journal_.folder());
    }
    communicator_->barrier();
  }

  // The run's tiles no earlier run finished.
  [[nodiscard]] std::vector<Tile> tiles_left() const {
    std::vector<Tile> todo;
    for (const auto& tile : run_.source->tiles()) {
      if (!done_.contains(tile.id)) todo.push_back(tile);
    }
    return todo;
  }

 private:
  [[nodiscard]] bool survive_rank_loss() const { return plan_.rendezvous.survive_rank_loss && ranks_.world_size > 1; }
  // Rank 0, every tile done but those of failed rasters: what is left of the outputs and
  // the run's files, then (when every tile is done) the journal goes.
  Outcome write_outputs(Outcome outcome, OutputStream& stream) {
    try {
      for (const auto& file : stream.finish(failed_)) {
        fmt::print("# wrote {}\n", file.string());
        summary_.outputs.push_back(std::filesystem::absolute(file).string());
      }
    } catch (const StoppedOnRequest& stopped) {
      fmt::print(stderr, "mgpr: {}\n", stopped.what());
      return Outcome::kStopped;
    }
    // The outputs are complete; a journal left behind only makes a rerun redo the writing.
    // With failed rasters it stays: a rerun reads only their tiles.
    if (outcome == Outcome::kComplete) finish_journals(journal_);
    return outcome;
  }

  const RunPlan& plan_;
  const RankEnvironment& ranks_;
  RunJournal journal_;
  Prepared run_;
  TileResults done_;                       // the results of earlier runs, until rank 0's writer takes them
  std::vector<std::int64_t> done_counts_;  // per image: tiles earlier runs finished
  std::int64_t done_total_ = 0;            // tiles finished: by earlier runs, then the run's too
  RasterFailures failed_;                  // every rank's rasters that could not be read
  std::vector<Tile> skipped_;              // rank 0: the tiles lost with two ranks
  RankSummary summary_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<ProgressPrinter> printer_;
};

}  // namespace

int run_rank(const RunPlan& plan, const RankEnvironment& ranks) {
  const auto started = Clock::now();
  install_stop_handlers();
  const auto early_store = serve_store_early(ranks, plan.rendezvous);
  // Two ranks on one GPU are refused before either spends minutes loading the model.
  if (plan.device.is_cuda)
    refuse_shared_gpu(ranks, plan.rendezvous, early_store, cuda_backend::device_uuid(plan.device.device.index()));
  RankRun rank(plan, ranks, prepare(plan, ranks));
  const auto todo = rank.tiles_left();
  rank.join(early_store, todo.size());
  auto outcome = Outcome::kStopped;
  try {
    outcome = rank.process(todo);
  } catch (const std::exception& failure) {
    rank.record_failure(failure, started);
    throw;
  }
  rank.report(outcome, started);
  return exit_status(outcome);
}

}  // namespace mgpr::runtime
