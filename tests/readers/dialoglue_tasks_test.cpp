// The DialoGLUE task table (readers/dialoglue_tasks.h): its rows, lookups by name and data
// folder, and the derived lists that help texts and error messages print.
#include "readers/dialoglue_tasks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dialtree::readers {
namespace {

using ::testing::ElementsAre;

TEST(DialoglueTasks, OneRowPerTaskInEnumOrder) {
  const auto& rows = dialoglue_tasks();
  ASSERT_EQ(rows.size(), 7u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(rows[i].task), i);
    EXPECT_EQ(&dialoglue_task(rows[i].task), &rows[i]);
  }
  const DialoglueTaskInfo& dstc8 = dialoglue_task(DialoglueTask::Dstc8);
  EXPECT_EQ(dstc8.name, "dstc8");
  EXPECT_EQ(dstc8.folder, "dstc8_sgd");
  EXPECT_EQ(dstc8.family, TaskFamily::Slot);
  EXPECT_EQ(dstc8.metric, "slot F1");
  const DialoglueTaskInfo& multiwoz = dialoglue_task(DialoglueTask::Multiwoz);
  EXPECT_FALSE(multiwoz.fine_tune);
  EXPECT_FALSE(multiwoz.probe);
}

TEST(DialoglueTasks, FindsByNameOrFolder) {
  ASSERT_NE(find_dialoglue_task("dstc8"), nullptr);
  EXPECT_EQ(find_dialoglue_task("dstc8"), find_dialoglue_task("dstc8_sgd"));
  EXPECT_EQ(find_dialoglue_task("banking")->task, DialoglueTask::Banking);
  EXPECT_EQ(find_dialoglue_task("Banking"), nullptr);  // case-sensitive, as DialoGLUE's keys
  EXPECT_EQ(find_dialoglue_task("atis"), nullptr);
  EXPECT_EQ(find_dialoglue_task(""), nullptr);
  EXPECT_TRUE(is_dialoglue_task("dstc8_sgd", TaskSet::Tagging));
  EXPECT_TRUE(is_dialoglue_task("top", TaskSet::Tagging));
  EXPECT_FALSE(is_dialoglue_task("top", TaskSet::Intent));
  EXPECT_FALSE(is_dialoglue_task("multiwoz", TaskSet::FineTune));
  EXPECT_TRUE(is_dialoglue_task("multiwoz", TaskSet::All));
}

TEST(DialoglueTasks, DerivedLists) {
  EXPECT_THAT(dialoglue_task_names(TaskSet::Intent), ElementsAre("banking", "clinc", "hwu"));
  EXPECT_THAT(dialoglue_task_names(TaskSet::Tagging), ElementsAre("restaurant8k", "dstc8", "top"));
  EXPECT_THAT(dialoglue_task_names(TaskSet::Tagging, TaskSpelling::Folder),
              ElementsAre("restaurant8k", "dstc8_sgd", "top"));
  EXPECT_THAT(dialoglue_task_names(TaskSet::Probe),
              ElementsAre("banking", "clinc", "hwu", "restaurant8k", "dstc8", "top"));
  EXPECT_EQ(join_dialoglue_task_names(TaskSet::FineTune, TaskSpelling::NameAndFolder),
            "banking, clinc, hwu, restaurant8k, dstc8, dstc8_sgd, top");
  EXPECT_EQ(join_dialoglue_task_names(TaskSet::All, TaskSpelling::NameOrFolder),
            "banking, clinc, hwu, restaurant8k, dstc8 (or dstc8_sgd), top, multiwoz");
  EXPECT_EQ(join_dialoglue_task_names(TaskSet::Intent, TaskSpelling::Name, ","),
            "banking,clinc,hwu");
}

}  // namespace
}  // namespace dialtree::readers
