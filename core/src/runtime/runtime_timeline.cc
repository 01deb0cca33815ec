// Timeline control at run time (Horovod's start_timeline / stop_timeline):
// each engine's Timeline opens and closes its file under its own lock, so
// the background threads keep running meanwhile.
#include <utility>
#include <vector>

#include "chorus/chorus.h"
#include "chorus/error.h"
#include "runtime/process_set_table.h"
#include "runtime/runtime_impl.h"

namespace chorus {

void Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) throw_if_error(Status::invalid_argument("start_timeline: the path is empty"));
  std::vector<std::pair<std::string, std::shared_ptr<detail::RuntimeImpl>>> files{{path, impl_}};
  for (auto& [id, engine] : sets_->member_engines()) {
    files.emplace_back(path + ".process_set" + std::to_string(id), engine);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [file, engine] = files[i];
    const Status opened = engine->timeline().open(file, engine->topology().rank, mark_cycles);
    if (!opened.is_ok()) {
      for (size_t j = 0; j < i; ++j) files[j].second->timeline().close();  // all or nothing
      throw_if_error(Status(opened.code(), "start_timeline: " + opened.message()));
    }
  }
}

bool Runtime::stop_timeline() {
  bool stopped = impl_->timeline().close();
  for (auto& [id, engine] : sets_->member_engines()) stopped = engine->timeline().close() || stopped;
  return stopped;
}

void Runtime::timeline_span(const std::string& row, const std::string& label,
                            std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end,
                            const ProcessSet& process_set) {
  engine(process_set, "timeline_span: ")->timeline().record(row, label, start, end);
}

void start_timeline(const std::string& path, bool mark_cycles) { current_runtime()->start_timeline(path, mark_cycles); }

bool stop_timeline() {
  std::shared_ptr<Runtime> runtime;
  try {
    runtime = current_runtime();  // also after another rank ended the job: its file still needs closing
  } catch (const PreconditionError&) {
    return false;  // not initialized: no timeline
  }
  return runtime->stop_timeline();
}

}  // namespace chorus
