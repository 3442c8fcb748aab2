; Inno Setup 6 script: installs the PyInstaller bundle (dist\captioner) as Captioner.
; Built by installer\build_windows.ps1, which passes the version and folders:
;   ISCC /DAppVersion=0.1.0 /DDistDir=..\..\dist /DOutputDir=..\..\dist captioner.iss
; Per-user install by default (no admin prompt); "Install for all users" is offered.

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef DistDir
  #define DistDir "..\..\dist"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif
#define AppName "Captioner"
#define AppExe "captioner.exe"

[Setup]
AppId={{5B6E2C1A-7F3D-4A8E-9C2B-3D1F6A9E4C70}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=Captioner contributors
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputDir={#OutputDir}
OutputBaseFilename=Captioner-{#AppVersion}-windows-x64-setup
SetupIconFile=..\..\resources\icons\captioner.ico
UninstallDisplayIcon={app}\{#AppExe}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes
; Captions are an accessibility aid: keep the installer itself readable.
ShowLanguageDialog=auto

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "autostart"; Description: "Start Captioner when I sign in"; GroupDescription: "Start-up:"; Flags: unchecked

[Files]
Source: "{#DistDir}\captioner\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon
Name: "{userstartup}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: autostart

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Only what the installer created; settings, transcripts and logs in the user's
; profile stay (they are the user's data).
Type: filesandordirs; Name: "{app}\_internal"
